"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('actors',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('channel_cursors',
    sa.Column('channel', sa.String(length=50), nullable=False),
    sa.Column('last_seq', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('channel')
    )
    op.create_table('deliveries',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('channel', sa.String(length=50), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('event_seq', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=300), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idempotency_key')
    )
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.create_index('ix_deliveries_due', ['channel', 'status', 'next_attempt_at'],
                              unique=False)

    op.create_table('events',
    sa.Column('seq', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('type', sa.String(length=40), nullable=False),
    sa.Column('ticket_id', sa.Integer(), nullable=False),
    sa.Column('ticket_path', sa.String(length=400), nullable=False),
    sa.Column('actor', sa.String(length=100), nullable=False),
    sa.Column('data', sa.JSON(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('seq'),
    sqlite_autoincrement=True
    )
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.create_index('ix_events_ticket', ['ticket_id', 'seq'], unique=False)

    op.create_table('tickets',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('parent_id', sa.Integer(), nullable=True),
    sa.Column('path', sa.String(length=400), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('title', sa.String(length=500), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_by', sa.String(length=100), nullable=False),
    sa.Column('assignee', sa.String(length=200), nullable=True),
    sa.Column('labels', sa.JSON(), nullable=False),
    sa.Column('due_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_attention_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('answer_text', sa.Text(), nullable=True),
    sa.Column('answer_data', sa.JSON(), nullable=True),
    sa.Column('answer_by', sa.String(length=100), nullable=True),
    sa.Column('answer_via', sa.String(length=50), nullable=True),
    sa.Column('answer_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('response_schema', sa.JSON(), nullable=True),
    sa.Column('proposal', sa.JSON(), nullable=True),
    sa.Column('refs', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=200), nullable=True),
    sa.Column('request_hash', sa.String(length=64), nullable=True),
    sa.ForeignKeyConstraint(['parent_id'], ['tickets.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('created_by', 'idempotency_key', name='uq_tickets_idempotency')
    )
    with op.batch_alter_table('tickets', schema=None) as batch_op:
        batch_op.create_index('ix_tickets_assignee', ['assignee'], unique=False)
        batch_op.create_index('ix_tickets_attention', ['next_attention_at'], unique=False)
        batch_op.create_index('ix_tickets_created_by', ['created_by'], unique=False)
        batch_op.create_index('ix_tickets_due', ['due_at'], unique=False)
        batch_op.create_index('ix_tickets_parent', ['parent_id'], unique=False)
        batch_op.create_index('ix_tickets_path', ['path'], unique=False)
        batch_op.create_index('ix_tickets_status', ['status'], unique=False)

    op.create_table('webhooks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('url', sa.String(length=2000), nullable=False),
    sa.Column('secret', sa.String(length=200), nullable=False),
    sa.Column('event_types', sa.JSON(), nullable=False),
    sa.Column('created_by', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('identities',
    sa.Column('actor_id', sa.Integer(), nullable=False),
    sa.Column('channel', sa.String(length=50), nullable=False),
    sa.Column('external_id', sa.String(length=300), nullable=False),
    sa.ForeignKeyConstraint(['actor_id'], ['actors.id'], ),
    sa.UniqueConstraint('channel', 'external_id', name='uq_identities')
    )
    op.create_table('messages',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('ticket_id', sa.Integer(), nullable=False),
    sa.Column('author', sa.String(length=100), nullable=False),
    sa.Column('via', sa.String(length=50), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('trusted', sa.Boolean(), nullable=False),
    sa.Column('external_id', sa.String(length=500), nullable=True),
    sa.Column('data', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['ticket_id'], ['tickets.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('via', 'external_id', name='uq_messages_external')
    )
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index('ix_messages_ticket', ['ticket_id'], unique=False)

    op.create_table('ticket_labels',
    sa.Column('ticket_id', sa.Integer(), nullable=False),
    sa.Column('label', sa.String(length=100), nullable=False),
    sa.ForeignKeyConstraint(['ticket_id'], ['tickets.id'], ),
    sa.PrimaryKeyConstraint('ticket_id', 'label')
    )
    with op.batch_alter_table('ticket_labels', schema=None) as batch_op:
        batch_op.create_index('ix_ticket_labels_label', ['label'], unique=False)

    op.create_table('ticket_refs',
    sa.Column('ticket_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('value', sa.String(length=500), nullable=False),
    sa.ForeignKeyConstraint(['ticket_id'], ['tickets.id'], ),
    sa.PrimaryKeyConstraint('ticket_id', 'name', 'value')
    )
    with op.batch_alter_table('ticket_refs', schema=None) as batch_op:
        batch_op.create_index('ix_ticket_refs_lookup', ['name', 'value'], unique=False)

    op.create_table('tokens',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('actor_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['actor_id'], ['actors.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )



def downgrade() -> None:

    op.drop_table('tokens')
    with op.batch_alter_table('ticket_refs', schema=None) as batch_op:
        batch_op.drop_index('ix_ticket_refs_lookup')

    op.drop_table('ticket_refs')
    with op.batch_alter_table('ticket_labels', schema=None) as batch_op:
        batch_op.drop_index('ix_ticket_labels_label')

    op.drop_table('ticket_labels')
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_index('ix_messages_ticket')

    op.drop_table('messages')
    op.drop_table('identities')
    op.drop_table('webhooks')
    with op.batch_alter_table('tickets', schema=None) as batch_op:
        batch_op.drop_index('ix_tickets_status')
        batch_op.drop_index('ix_tickets_path')
        batch_op.drop_index('ix_tickets_parent')
        batch_op.drop_index('ix_tickets_due')
        batch_op.drop_index('ix_tickets_created_by')
        batch_op.drop_index('ix_tickets_attention')
        batch_op.drop_index('ix_tickets_assignee')

    op.drop_table('tickets')
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.drop_index('ix_events_ticket')

    op.drop_table('events')
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_deliveries_due')

    op.drop_table('deliveries')
    op.drop_table('channel_cursors')
    op.drop_table('actors')

