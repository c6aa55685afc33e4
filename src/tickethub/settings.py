"""The one settings object. Environment variables use the prefix ``TICKETHUB_``; a TOML
file named by ``TICKETHUB_CONFIG`` (or ``tickethub.toml`` in the working folder) may set
the same names in lower case. Every setting has a default that works on a laptop."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TICKETHUB_", extra="ignore")

    config: Path | None = Field(None, description="A TOML file with more settings.")
    data_dir: Path = Field(Path("data"), description="Where the SQLite database, artifacts "
                           "and other files live.")
    database_url: str | None = Field(None, description="SQLAlchemy URL; default SQLite in "
                                     "data_dir. PostgreSQL: postgresql+psycopg://u:p@host/db "
                                     "(needs `pip install 'tickethub[postgres]'`)")
    host: str = Field("127.0.0.1", description="Address the server listens on.")
    port: int = Field(8080, ge=0, le=65535, description="Port the server listens on.")
    workers: int = Field(1, ge=1, le=256, description="Hub processes serving the port "
                         "(`serve --workers`); more than one needs PostgreSQL.")
    public_url: str | None = Field(None, description="The URL people reach the hub at, used "
                                   "in links; default http://host:port.")
    telemetry: bool = Field(False, description="Emit OpenTelemetry traces, metrics and "
                            "logs of requests through FastAPI's native telemetry (an "
                            "OpenTelemetry SDK must be configured, e.g. "
                            "FASTAPI_OTEL_AUTO_CONFIGURE=true with the OTEL_* variables).")
    forwarded_allow_ips: str | None = Field(None, description="Comma-separated addresses "
                                            "of reverse proxies whose X-Forwarded-For and "
                                            "X-Forwarded-Proto headers are trusted, e.g. "
                                            "`127.0.0.1`. Unset: those headers are ignored "
                                            "(links use public_url either way).")
    admin_token: SecretStr | None = Field(None, description="An admin token, registered "
                                          "at any start (older admin tokens keep working). "
                                          "Unset at the first start: one is generated, "
                                          "printed and saved to data_dir/admin-token.")
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Largest request body "
                                "accepted; larger ones get 413.")
    wait_max_seconds: float = Field(60.0, gt=0, le=300, description="Longest long-poll.")
    sse_keepalive_seconds: float = Field(15.0, gt=0, description="Seconds between SSE "
                                         "keep-alive comments.")
    deadline_check_max_seconds: float = Field(30.0, gt=0, description="Upper bound on the "
                                              "sleep of the deadline loop.")
    delivery_poll_seconds: float = Field(1.0, gt=0, description="How often outbound "
                                         "channels look for new events.")
    delivery_max_attempts: int = Field(12, ge=1, description="Attempts before a delivery "
                                       "is marked dead.")
    delivery_backoff_seconds: float = Field(1.0, gt=0, description="First retry delay; "
                                            "doubles per attempt.")
    delivery_backoff_max_seconds: float = Field(600.0, gt=0, description="Longest retry "
                                                "delay.")
    delivery_timeout_seconds: float = Field(10.0, gt=0, description="Timeout of one "
                                            "outbound HTTP delivery.")
    auth_cache_seconds: float = Field(2.0, ge=0, le=60, description="How long a checked "
                                      "token is trusted without a database read. A revoked "
                                      "token stops at once, in every hub process (they "
                                      "tell each other); should that news be lost, within "
                                      "this time. 0: check every time.")
    # -- throttling of failed sign-ins, sign-in links and API tokens (docs/api.md) --
    auth_throttle_account_attempts: int = Field(5, ge=1, description="Failed sign-ins "
                                                "per account (known or not) before each "
                                                "further attempt must wait (back-off, 429 "
                                                "with Retry-After).")
    auth_throttle_address_attempts: int = Field(20, ge=1, description="Failed sign-ins, "
                                                "sign-in links or API tokens per client "
                                                "address (each counted apart) before each "
                                                "further attempt from it must wait.")
    auth_throttle_base_seconds: float = Field(1.0, gt=0, description="The first wait; "
                                              "doubles with every further failure.")
    auth_throttle_max_seconds: float = Field(900.0, gt=0, description="The longest wait.")
    auth_throttle_forget_seconds: float = Field(3600.0, gt=0, description="Failures are "
                                                "forgotten this long after the last one.")
    bus: str = Field("auto", pattern="^(auto|memory|postgres)$", description="How waiters "
                     "are woken: memory (one process), postgres (LISTEN/NOTIFY, several hub "
                     "processes on one database); auto picks postgres on PostgreSQL.")
    bus_sweep_seconds: float = Field(2.0, gt=0, description="With the postgres bus: how "
                                     "often each process looks in the log for changes "
                                     "whose notification never came (a process stopped "
                                     "between commit and NOTIFY) and wakes their waiters.")
    log_level: str = Field("info", description="debug, info, warning or error.")
    log_format: str = Field("text", pattern="^(text|json)$", description="text: one "
                            "readable line per record; json: one JSON object per line "
                            "(time, level, logger, message, request_id), for log shippers.")
    metrics: bool = Field(False, description="Serve GET /metrics in the Prometheus text "
                          "format (docs/operations.md); off: 404.")
    metrics_token: SecretStr | None = Field(None, description="When set, a scrape of "
                                            "/metrics must send it as a bearer token.")
    metrics_cache_seconds: float = Field(5.0, ge=0, le=300, description="How long counts "
                                         "read from the database for /metrics are reused, "
                                         "so frequent scrapes stay cheap.")

    # -- JSON Schemas callers supply (response_schema, tool parameters; docs/api.md) -------
    schema_max_bytes: int = Field(262_144, ge=1024, description="Largest JSON Schema a "
                                  "caller may give (as compact JSON); larger: 422.")
    schema_max_depth: int = Field(64, ge=4, le=512, description="Deepest nesting of "
                                  "objects and arrays in a caller's JSON Schema.")
    schema_max_subschemas: int = Field(10_000, ge=10, description="Most subschemas in a "
                                       "caller's JSON Schema, and most subschemas its "
                                       "references may apply to one value.")
    schema_max_steps: int = Field(50_000, ge=100, description="Most keyword checks one "
                                  "validation against a caller's schema may make; a value "
                                  "that needs more gets 422 instead of hogging the hub.")
    schema_value_max_bytes: int = Field(1_048_576, ge=1024, description="Largest value "
                                        "(answer data, proposal, edited approval) checked "
                                        "against a schema, as compact JSON.")
    schema_value_max_depth: int = Field(64, ge=4, le=512, description="Deepest nesting of "
                                        "a value checked against a schema.")
    schema_check_workers: int = Field(1, ge=0, le=64, description="Processes that run the "
                                      "costly schema checks (big schemas, values needing "
                                      "many steps) outside the hub's process, so they never "
                                      "slow other requests; 0: run them in the hub.")

    # -- OpenAI-compatible gateway (/v1) and MCP server (/mcp, `tickethub mcp`) ------------
    openai_default_mode: str = Field("block", pattern="^(block|handoff)$", description="How "
                                     "a request to model `human` waits when it sends no "
                                     "X-Tickethub-Mode header: block or handoff.")
    openai_block_seconds: float = Field(300.0, gt=0, le=3600, description="Longest a "
                                        "blocking request waits for a person before the "
                                        "typed deadline reply.")
    openai_keepalive_seconds: float = Field(10.0, gt=0, description="Seconds between SSE "
                                            "keep-alive comments while a stream waits.")
    openai_replay_answers: bool = Field(False, description="Let a plain question (no tools) "
                                        "to model `human`, sent again word for word without "
                                        "a conversation id, get the person's earlier answer "
                                        "at once instead of opening a new ticket. Never for "
                                        "tool calls or approvals.")
    upstream_base_url: str | None = Field(None, description="An OpenAI-compatible endpoint "
                                          "(OpenAI, Ollama, vLLM, llama.cpp) that /v1 "
                                          "forwards non-human models to, e.g. "
                                          "http://127.0.0.1:11434/v1.")
    upstream_api_key: SecretStr | None = Field(None, description="The upstream's API key.")
    upstream_models: list[str] = Field(["*"], description="Model names (or globs) sent "
                                       "upstream; others get 404.")
    upstream_timeout_seconds: float = Field(120.0, gt=0, description="Longest wait for "
                                            "the upstream; then 504.")
    upstream_approval_tools: list[str] = Field([], description="Tool names (or globs) "
                                               "whose calls a person must approve.")
    upstream_approval_seconds: float = Field(300.0, gt=0, le=3600, description="Longest "
                                             "wait for an approval; then the call is "
                                             "refused (approvals fail closed).")
    upstream_on_reject: str = Field("message", pattern="^(message|error)$", description=
                                    "A refused tool call becomes an assistant message "
                                    "(message) or a 403 error (error).")
    mcp_wait_seconds: float = Field(50.0, gt=0, le=50, description="Longest an MCP tool "
                                    "call waits for an answer (MCP clients cut calls "
                                    "near 60 s).")
    # -- web inbox --
    session_ttl_seconds: float = Field(7 * 24 * 3600, gt=0, description="How long a "
                                       "browser sign-in lasts without use; renewed while used.")

    # -- Agent Protocol door (/ap/v1, docs/agent-protocol.md) -----------------------------
    ap_step_hold_seconds: float = Field(30.0, ge=0, le=300, description="How long POST "
                                        ".../steps holds for a reply before it returns the "
                                        "step as running.")
    ap_max_artifact_bytes: int = Field(50 * 1024 * 1024, ge=1, description="Largest "
                                       "artifact file accepted; larger uploads get 413.")
    ap_anonymous: bool | None = Field(None, description="Serve Agent Protocol clients "
                                      "without a token as ap_anonymous_agent. Default: on "
                                      "when the hub listens on loopback only, else off.")
    ap_anonymous_agent: str = Field("ap-client", pattern=r"^[A-Za-z0-9_.@:+-]{1,100}$",
                                    description="The agent name anonymous Agent Protocol "
                                    "clients act as.")
    ap_worker: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
                                  description="An agent worker run inside the hub: the "
                                  "`module:function` of a step handler with the same "
                                  "contract as the SDK's `serve_tasks` (docs/agent-protocol.md"
                                  "). It answers every Agent Protocol step at once, with no "
                                  "network hop. Unset: steps wait for a person or an SDK "
                                  "worker.")
    ap_worker_name: str = Field("ap-worker", pattern=r"^[A-Za-z0-9_.@:+-]{1,100}$",
                                description="The responder name the in-hub worker replies "
                                "as.")
    ap_worker_concurrency: int = Field(64, ge=1, le=10_000, description="Most steps the "
                                       "in-hub worker handles at once.")
    ap_worker_lease_seconds: float = Field(30.0, ge=0.3, le=3600, description="With "
                                           "several hub processes: how long a step the "
                                           "in-hub worker handles stays claimed without "
                                           "renewal (renewed every third of it); a step "
                                           "whose process died is taken by another "
                                           "within about 1.3 times this.")

    # -- GitHub channel (channels/github, docs/github.md) --
    github_token: SecretStr | None = Field(None, description="A GitHub token (PAT or "
                                           "installation token); the channel runs when set.")
    github_api_url: str = Field("https://api.github.com", description="GitHub's REST API; "
                                "GitHub Enterprise Server: https://HOST/api/v3.")
    github_webhook_secret: SecretStr | None = Field(None, description="Secret of the "
                                                    "repository webhook to /hooks/github; "
                                                    "unset: every delivery gets 401.")
    github_app_id: str | None = Field(None, description="GitHub App id (instead of a token).")
    github_app_private_key: SecretStr | None = Field(None, description="GitHub App private "
                                                     "key (PEM).")
    github_app_installation_id: int | None = Field(None, description="GitHub App "
                                                   "installation id.")
    github_write_interval_seconds: float = Field(1.0, ge=0, description="Least time between "
                                                 "two writes to GitHub (one at a time).")
    github_permission_ttl_seconds: float = Field(60.0, ge=0, description="How long a "
                                                 "commenter's repository permission is cached.")
    github_poll_seconds: float = Field(60.0, gt=0, description="Polling period for "
                                       "repositories connected with --poll (GitHub's "
                                       "X-Poll-Interval may make it longer).")
    github_retry_inline_max_seconds: float = Field(10.0, ge=0, description="Rate-limit "
                                                   "waits up to this long are slept in place; "
                                                   "longer ones reschedule the delivery.")
    github_backoff_seconds: float = Field(1.0, gt=0, description="First backoff after a "
                                          "GitHub 5xx; doubles per retry.")
    github_inbox_backoff_max_seconds: float = Field(300.0, gt=0, description="Longest wait "
                                                    "between two tries of a webhook delivery "
                                                    "that failed (e.g. GitHub down).")
    github_inbox_retry_hours: float = Field(24.0, gt=0, le=24 * 30, description="How long "
                                            "a failing webhook delivery is retried after it "
                                            "arrived; then it is marked failed and its "
                                            "commenter is told on the issue.")

    # -- mail: mailbox → issue tree and the email channel (mail/, channels/email, docs/mail.md)
    mail_root_issue: int | None = Field(None, description="Ticket id that issues raised by "
                                        "mail go under; unset: they are top-level.")
    mail_extractor: str = Field("rules", pattern="^(rules|learned|llm)$", description="rules "
                                "(offline cues), learned (offline, the model shipped in "
                                "the package) or llm (the model at mail_llm_base_url).")
    mail_max_bytes: int = Field(25 * 1024 * 1024, ge=1024, description="Larger mails are "
                                "quarantined unread.")
    mail_ignore: list[Literal["spam", "bulk"]] = Field(
        ["spam", "bulk"], description="Mail the pipeline reads and ignores (never an "
        "issue): spam (X-Spam-Flag: YES or X-Spam-Status: Yes from the server's filter), "
        "bulk (Precedence: bulk/junk outside a mailing list or a thread). [] reads all.")
    mail_defer_days: float = Field(7.0, gt=0, description="How long a mail that defers an "
                                   "issue defers it.")
    mail_llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint for "
                                          "the llm extractor; default upstream_base_url.")
    mail_llm_api_key: SecretStr | None = Field(None, description="Its API key; default "
                                               "upstream_api_key.")
    mail_llm_model: str = Field("gpt-4o-mini", description="Model the llm extractor asks.")
    mail_llm_chunk_tokens: int = Field(3000, ge=200, description="A longer mail is read in "
                                       "chunks of this many tokens with a running summary.")
    mail_digest_stalled_days: float = Field(7.0, gt=0, description="An open issue unchanged "
                                            "this long is 'stalled' in the digest.")
    mail_digest_to: list[str] = Field([], description="Addresses the daily digest is "
                                      "mailed to.")
    mail_from: str = Field("tickethub@localhost", description="From address of mail the "
                           "hub sends (notifications, digest).")
    mail_reply_domain: str | None = Field(None, description="Domain of signed reply "
                                          "addresses (reply+<token>@domain); default the "
                                          "domain of mail_from.")
    mail_reply_secret: SecretStr | None = Field(None, description="Key that signs reply "
                                                "tokens; default a random key kept in "
                                                "data_dir/mail-reply.key.")
    mail_responders: dict[str, str] = Field({}, description="Address → actor name of people "
                                            "whose mailed replies answer tickets; the actor "
                                            "needs the responder role.")
    mail_notify: dict[str, str] = Field({}, description="Assignee name → address that "
                                        "gets ticket notifications (assignees that are "
                                        "addresses need no entry).")
    imap_url: str | None = Field(None, description="Mailbox `mail watch` follows, e.g. "
                                 "imap://hub@mail.example.org/INBOX (imaps:// for TLS on "
                                 "connect; imap:// uses STARTTLS when offered).")
    imap_password: SecretStr | None = Field(None, description="IMAP password; unset: "
                                            "prompted for, never echoed.")
    imap_idle_seconds: float = Field(300.0, gt=0, le=1740, description="Longest IDLE "
                                     "before it is renewed (RFC 2177: under 29 minutes).")
    imap_batch: int = Field(50, ge=1, le=1000, description="Messages fetched per round trip.")
    smtp_host: str | None = Field(None, description="SMTP server for notifications and the "
                                  "digest; unset: the email channel is off.")
    smtp_port: int = Field(25, ge=1, le=65535, description="SMTP port (465: TLS on connect).")
    smtp_user: str | None = Field(None, description="SMTP login, if the server wants one.")
    smtp_password: SecretStr | None = Field(None, description="SMTP password.")
    smtp_starttls: bool = Field(True, description="Use STARTTLS when the server offers it.")

    # Personal agents (agents/, docs/personal-agents.md)
    agents_enabled: bool = Field(True, description="Run people's personal agents (built-ins "
                                 "and the `tickethub.agents` entry points).")
    agents_plugins: list[str] = Field([], description="More agents to load, as "
                                      "`module:attribute` (beside the entry points).")
    agents_secret_key: SecretStr | None = Field(None, description="Key (32 bytes, URL-safe "
                                                "base64) that seals people's agent secrets; "
                                                "unset: agent-secrets.key in data_dir (0600).")
    agents_llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint "
                                            "agents use; default upstream_base_url.")
    agents_llm_api_key: SecretStr | None = Field(None, description="Its API key; default "
                                                 "upstream_api_key.")
    agents_llm_model: str = Field("gpt-4o-mini", description="Model personal agents ask.")

    # chat (docs/chat.md): conversations in threads on a chat server
    matrix_homeserver: str | None = Field(None, description="Matrix homeserver URL, e.g. "
                                          "https://matrix.example.org; unset: the Matrix "
                                          "chat transport is off.")
    matrix_user: str = Field("@bot:localhost", description="The bot's Matrix user id.")
    matrix_password: SecretStr | None = Field(None, description="The bot's Matrix password "
                                              "(or set matrix_token).")
    matrix_token: SecretStr | None = Field(None, description="The bot's Matrix access "
                                           "token (instead of a password).")
    matrix_rooms: list[str] = Field([], description="Room ids the bot joins and serves "
                                    "(direct rooms always); empty: every room it is "
                                    "invited to.")
    slack_signing_secret: SecretStr | None = Field(None, description="The Slack app's "
                                                   "signing secret; unset: POST /hooks/slack "
                                                   "is off (404).")
    slack_bot_token: SecretStr | None = Field(None, description="The Slack bot token "
                                              "(xoxb-...) replies are posted with.")
    slack_api_url: str = Field("https://slack.com/api", description="Base URL of Slack's "
                               "Web API (chat.postMessage is called under it).")
    mattermost_tokens: list[SecretStr] = Field([], description="Tokens of the Mattermost "
                                               "outgoing webhooks and slash commands "
                                               "allowed to call POST /hooks/mattermost; "
                                               "empty: that door is off (404).")
    mattermost_url: str | None = Field(None, description="Mattermost server URL replies "
                                       "are posted to (POST /api/v4/posts).")
    mattermost_bot_token: SecretStr | None = Field(None, description="The Mattermost bot "
                                                   "account's access token.")
    telegram_webhook_secret: SecretStr | None = Field(None, description="The secret_token "
                                                      "given to Telegram's setWebhook; "
                                                      "unset: POST /hooks/telegram is off "
                                                      "(404).")
    telegram_bot_token: SecretStr | None = Field(None, description="The Telegram bot "
                                                 "token replies are sent with.")
    telegram_api_url: str = Field("https://api.telegram.org", description="Base URL of the "
                                  "Telegram Bot API.")
    chat_actors: dict[str, str] = Field({}, description="Webhook chat users as hub actors, "
                                        "e.g. {\"slack:U024BE7LH\": \"alice\"}; unmapped "
                                        "users act as `transport:user id`.")
    chat_plugins: list[str] = Field(["tickethub.conversations.examples.foodselection:"
                                     "handlers"], description="Conversation handlers to "
                                    "register, each `module:function` returning a list.")
    chat_responders: list[str] = Field([], description="Chat user ids (e.g. "
                                       "@lead:example.org) who may move anyone's "
                                       "conversation on by replying to the bot.")
    chat_timeout_check_seconds: float = Field(5.0, gt=0, description="How often timed-out "
                                              "conversations are looked for.")
    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        config_file = env_settings().get("config") or init_settings().get("config")
        path = Path(config_file) if config_file else Path("tickethub.toml")
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir.resolve() / 'tickethub.db'}"

    @property
    def effective_public_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"
