"""The email channel: ticket notifications over SMTP to the people assigned
(:class:`EmailChannel`), and their replies answering the ticket (:class:`ReplyReader`,
used by the mail pipeline for every mail it reads)."""

from tickethub.channels.email.channel import EmailChannel
from tickethub.channels.email.replies import ReplyReader
from tickethub.channels.email.smtp import SmtpSender

__all__ = ["EmailChannel", "ReplyReader", "SmtpSender"]
