"""Mailbox → issue tree: parse mail, thread it, strip quotes, extract validated
operations and apply them to the ticket tree through the services.

Modules, one concept each: ``parse`` (bytes → :class:`~tickethub.mail.parse.ParsedMail`),
``html_text`` (HTML → plain text, nothing fetched), ``quotes`` (the author's own text),
``threads`` (JWZ threading), ``operations`` (the validated operations), ``extractors``
(``rules`` and ``llm``), ``apply`` (operations → service calls), ``pipeline`` (one run
over a source), ``sources`` and ``imap`` (where raw mail comes from), ``tree`` (export),
``score`` (compare with labels), ``digest`` (daily digest), ``reply_token`` (signed reply
addresses).
"""
