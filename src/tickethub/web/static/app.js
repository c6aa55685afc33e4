// tickethub web inbox: live updates (SSE), keyboard, Markdown preview.
// Plain JS, no build step. Pages work without it; this only adds to them.
(function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const csrf = () => ($('meta[name="csrf"]') || {}).content || "";

  // ---- keyboard: j/k move, Enter/o open, a answer, / search -------------------------
  let selected = -1;
  const items = () => $$(".rows > .row, .tree .node");
  function select(i) {
    const list = items();
    if (!list.length) return;
    selected = Math.max(0, Math.min(list.length - 1, i));
    list.forEach((el, n) => el.classList.toggle("selected", n === selected));
    const el = list[selected];
    const link = $("a", el);
    if (link) link.focus({ preventScroll: true });
    el.scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    const list = items();
    if (ev.key === "j") { select(selected + 1); ev.preventDefault(); }
    else if (ev.key === "k") { select(selected < 0 ? 0 : selected - 1); ev.preventDefault(); }
    else if ((ev.key === "o" || ev.key === "Enter") && list[selected] && t === document.body) {
      location.href = list[selected].dataset.href;
    } else if (ev.key === "a") {
      const answer = $("#answer textarea, #answer input:not([type=hidden]), #answer select");
      if (answer) { answer.focus(); ev.preventDefault(); }
      else if (list[selected]) { location.href = list[selected].dataset.href + "#answer"; }
    } else if (ev.key === "/" && $("#q")) { $("#q").focus(); ev.preventDefault(); }
  });
  if (location.hash === "#answer") {
    addEventListener("load", () => {
      const f = $("#answer textarea, #answer input:not([type=hidden]), #answer select");
      if (f) f.focus();
    });
  }

  // ---- inbox: new tickets live, count in the tab title --------------------------------
  const inbox = $(".inbox[data-stream]");
  if (inbox && window.EventSource) {
    const baseTitle = document.title;
    let fresh = 0;
    const source = window.tickethub.stream(inbox.dataset.stream);  // live.js
    source.addEventListener("row", (ev) => {
      const data = JSON.parse(ev.data);
      if ($(`.row[data-id="${data.id}"]`)) return;
      const holder = document.createElement("ol");
      holder.innerHTML = data.html;  // rendered and escaped by the server
      const row = holder.firstElementChild;
      row.classList.add("fresh");
      if (window.tickethub.placeRow($("#rows"), row, data)) {  // in sort order (live.js)
        if (selected >= 0 && items().indexOf(row) <= selected) selected += 1;
      }
      fresh += 1;
      const empty = $("#empty"); if (empty) empty.remove();
      const total = $("#total");
      if (/^\d+$/.test(total.textContent)) {
        total.textContent = String(Number(total.textContent) + 1);
        $("#total-word").textContent = total.textContent === "1" ? "ticket" : "tickets";
      }
      document.title = `(${fresh}) ${baseTitle}`;
      $("#live-status").textContent = `${fresh} new ticket${fresh === 1 ? "" : "s"}`;
    });
    source.addEventListener("status", (ev) => {
      const data = JSON.parse(ev.data);
      const row = $(`.row[data-id="${data.id}"]`);
      if (!row) return;
      const slot = $(".status-slot", row);
      slot.innerHTML = "";
      const badge = document.createElement("span");
      badge.className = `status status-${data.status}`;
      badge.textContent = data.status.replace("_", " ");
      slot.append(badge);
      row.classList.toggle("resolved", !data.waiting);
    });
  }

  // ---- ticket page: answered elsewhere → banner + disabled forms ---------------------
  const ticket = $(".ticket[data-stream]");
  if (ticket && window.EventSource) {
    const source = window.tickethub.stream(ticket.dataset.stream);
    source.addEventListener("change", (ev) => {
      const data = JSON.parse(ev.data);
      const badge = $("#status-badge");
      if (badge) {
        badge.innerHTML = "";
        const span = document.createElement("span");
        span.className = `status status-${data.status}`;
        span.textContent = data.status.replace("_", " ");
        badge.append(span);
      }
      if (data.html && !document.getElementById("m" + data.message_id)) {
        const holder = document.createElement("div");
        holder.innerHTML = data.html;  // rendered and sanitized by the server
        $("#messages").append(holder.firstElementChild);
        const none = $("#no-messages"); if (none) none.remove();
        const count = $("#message-count");
        if (count) count.textContent = String($$("#messages .message").length);
      }
      if (!data.waiting) {
        const banner = $("#live-banner");
        banner.textContent = `This ticket is ${data.resolved_by}.`;
        banner.classList.remove("hidden");
        $$(".ticket > .meta .due").forEach((el) => el.remove());
        $$("#answer form").forEach((form) => {
          form.setAttribute("aria-disabled", "true");
          // form.elements: also the decision bar's buttons (form="..." outside the form)
          Array.from(form.elements).forEach((el) => { el.disabled = true; });
        });
      } else {
        $$('#answer input[name="version"]').forEach((el) => { el.value = data.version; });
      }
    });
  }

  // ---- in-page validation: forms.js; approval review: review.js --------------------

  // ---- Markdown preview (rendered by the server's safe renderer) ----------------------
  $$(".preview-button").forEach((button) => {
    button.addEventListener("click", async () => {
      const body = new FormData();
      body.append("csrf", csrf());
      body.append("text", document.getElementById(button.dataset.source).value);
      // Asking for JSON: a refusal (an ended session, a stale form) is the problem+json
      // whose detail is shown, not the sign-in page followed into the preview box.
      const response = await fetch("/preview", {
        method: "POST", body, credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      const target = document.getElementById(button.dataset.target);
      if (response.ok) {
        target.innerHTML = await response.text(); // the server's safe renderer's HTML
      } else {
        const problem = await response.json().catch(() => ({}));
        const said = document.createElement("p");
        said.textContent = "No preview: " + (problem.detail || "the hub did not answer");
        target.replaceChildren(said);
      }
      target.classList.remove("hidden");
    });
  });

  // ---- tree: expand / collapse all ----------------------------------------------------
  const expand = $("#expand-all"), collapse = $("#collapse-all");
  if (expand) expand.addEventListener("click", () => $$(".tree details").forEach((d) => { d.open = true; }));
  if (collapse) collapse.addEventListener("click", () => $$(".tree details").forEach((d) => { d.open = false; }));
})();
