"""Sending mail over SMTP (stdlib ``smtplib``): TLS on connect for port 465, STARTTLS
whenever the server offers it (unless switched off), AUTH when a user is configured."""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from typing import Any


class SmtpSender:
    def __init__(self, host: str, port: int = 25, *, user: str | None = None,
                 password: str | None = None, starttls: bool = True,
                 timeout: float = 30.0) -> None:
        self.host, self.port = host, port
        self._user, self._password = user, password
        self._starttls = starttls
        self._timeout = timeout

    @classmethod
    def from_settings(cls, settings: Any) -> SmtpSender:
        if not settings.smtp_host:
            from tickethub.errors import ValidationFailed

            raise ValidationFailed("set smtp_host to send mail", field="smtp_host")
        password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
        return cls(settings.smtp_host, settings.smtp_port, user=settings.smtp_user,
                   password=password, starttls=settings.smtp_starttls)

    def send(self, message: EmailMessage) -> None:
        """Send one message; raises ``smtplib.SMTPException`` or ``OSError`` on failure."""
        context = ssl.create_default_context()
        if self.port == 465:
            client: smtplib.SMTP = smtplib.SMTP_SSL(self.host, self.port, timeout=self._timeout,
                                                    context=context)
        else:
            client = smtplib.SMTP(self.host, self.port, timeout=self._timeout)
        with client:
            client.ehlo()
            if self.port != 465 and self._starttls and client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
            if self._user:
                client.login(self._user, self._password or "")
            client.send_message(message)
