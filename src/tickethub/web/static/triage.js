// tickethub triage view: action keys, move-to-next, undo, read/unread, bulk select.
// Plain JS, no build step. Every action here is also a plain form that works without it.
// Undo is honest: nothing is sent until the undo window has passed (or the page is left,
// which sends what is pending at once), so an agent is never woken by a decision that is
// then taken back.
(function () {
  "use strict";
  if (!document.body.classList.contains("page-triage")) return;
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  // How long an action waits for Undo (tests shorten it with window.tickethubUndoMs).
  const undoMs = () => Number(window.tickethubUndoMs || 5000);
  const root = $(".triage");
  const back = root.dataset.back || "";
  const paneBox = $("#pane");
  const toast = $("#toast"), toastText = $("#toast-text"), undoButton = $("#undo");
  // Actions after which the ticket leaves the waiting list: the view moves on.
  const RESOLVING = new Set(["approve", "deny", "reply", "done", "cancel", "snooze"]);
  const VERBS = { approve: "Approved", deny: "Denied", reply: "Answered", done: "Done:",
    cancel: "Cancelled", snooze: "Snoozed", reopen: "Reopened", comment: "Commented on",
    assign: "Assigned", label: "Relabelled" };

  const rows = () => $$("#tlist > .trow:not(.pending)");
  const current = () => $("#tlist > .trow.current");
  const narrow = () => matchMedia("(max-width: 48rem)").matches;

  // ---- the pane ----------------------------------------------------------------------
  let loading = 0;
  async function openRow(row, show) {
    if (!row) {
      paneBox.innerHTML = '<p class="empty">Nothing left here. Well done.</p>';
      return;
    }
    $$("#tlist > .trow.current").forEach((r) => {
      r.classList.remove("current");
      const a = $(".ttitle", r); if (a) a.removeAttribute("aria-current");
    });
    row.classList.add("current");
    $(".ttitle", row).setAttribute("aria-current", "true");
    row.scrollIntoView({ block: "nearest" });
    const id = row.dataset.id;
    const mine = ++loading;
    const response = await fetch(`/triage/pane/${id}?back=${encodeURIComponent(back)}`,
      { headers: { Accept: "text/html" }, credentials: "same-origin" });
    if (mine !== loading) return;  // a later move won
    if (response.status === 401 || response.redirected) { location.reload(); return; }
    paneBox.innerHTML = response.ok ? await response.text()
      : '<p class="error">This ticket could not be loaded.</p>';
    row.classList.remove("unread");
    $$(".dot, .sr-only", $(".ttitle", row)).forEach((el) => el.remove());
    const url = new URL(location.href);
    url.searchParams.set("open", id);
    url.searchParams.delete("done"); url.searchParams.delete("did"); url.searchParams.delete("n");
    history.replaceState(null, "", url);
    if (show && narrow()) document.body.classList.add("has-open");
    paneBox.dataset.ready = id;
  }
  function move(step) {
    const list = rows();
    if (!list.length) return;
    const at = list.indexOf(current());
    const next = at < 0 ? 0 : Math.max(0, Math.min(list.length - 1, at + step));
    if (next !== at) openRow(list[next], false);
  }
  // The row to show after ``row`` leaves: the next one, else the one before.
  function after(row) {
    const list = rows();
    const at = list.indexOf(row);
    return list[at + 1] || list[at - 1] || null;
  }

  // ---- the toast and the one pending action -----------------------------------------
  let pending = null;
  let toastTimer = 0;
  function say(text, { undo = false, error = false } = {}) {
    toastText.textContent = text;
    undoButton.classList.toggle("hidden", !undo);
    toast.classList.toggle("error", error);
    toast.classList.remove("hidden");
    clearTimeout(toastTimer);
    if (!undo) toastTimer = setTimeout(() => toast.classList.add("hidden"), 4000);
  }
  function schedule(label, send, restore) {
    flush();  // one pending action at a time: an older one goes now
    const item = { send, restore, timer: 0 };
    item.timer = setTimeout(() => { if (pending === item) { pending = null; run(item); } },
      undoMs());
    pending = item;
    say(label, { undo: true });
  }
  function flush() {
    if (!pending) return;
    const item = pending;
    pending = null;
    clearTimeout(item.timer);
    run(item, true);
  }
  async function run(item, leaving) {
    toast.classList.add("hidden");
    try {
      await item.send(leaving);
    } catch (err) {
      item.restore();
      say(`Not sent: ${err.message}`, { error: true });
    }
  }
  function undo() {
    if (!pending) return;
    const item = pending;
    pending = null;
    clearTimeout(item.timer);
    item.restore();
    say("Undone: nothing was sent.");
  }
  undoButton.addEventListener("click", undo);
  // Leaving the page sends what is pending (keepalive lets it outlive the page).
  addEventListener("pagehide", flush);

  // The outcome as JSON, or the error as the hub's problem+json (the same body as the
  // native API's): its detail says what is wrong, with the field it names.
  async function post(url, body, leaving) {
    const response = await fetch(url, { method: "POST", body, keepalive: !!leaving,
      credentials: "same-origin", headers: { Accept: "application/json" } });
    let data = {};
    try { data = await response.json(); } catch (e) { /* not JSON: a proxy's page */ }
    if (response.status === 401 || response.redirected) throw new Error("sign in again");
    if (!response.ok) throw new Error(data.detail || `the hub answered ${response.status}`);
    return data;
  }

  function bumpCount(delta) {
    const view = new URL(location.href).searchParams.get("view") || "team";
    [$(`#count-${view}`), $("#total")].forEach((el) => {
      if (!el) return;
      const n = Number(el.textContent.replace(/,/g, ""));
      if (!Number.isNaN(n)) el.textContent = Math.max(0, n + delta).toLocaleString("en-US");
    });
  }

  // ---- one ticket's action -------------------------------------------------------------
  const NEEDS = { deny: ["reason", "Say why, so the agent can do better."],
    reply: ["text", "Write an answer."], comment: ["body", "Write a comment."] };
  function fieldError(form, message) {
    let p = $(".error.client", form);
    if (!p) {
      p = document.createElement("p");
      p.className = "error client"; p.setAttribute("role", "alert");
      p.id = `err-${form.dataset.action}-client`;
      const button = $("button[type=submit]", form);
      form.insertBefore(p, button);
    }
    p.textContent = message;
    const field = $("textarea, input:not([type=hidden])", form);
    if (field) {
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-describedby", p.id);
      field.focus();
    }
  }
  function submitAction(form) {
    const action = form.dataset.action;
    const body = new FormData(form);
    const need = NEEDS[action];
    if (need && !String(body.get(need[0]) || "").trim()) { fieldError(form, need[1]); return; }
    const pane = $("#tpane");
    const id = pane ? pane.dataset.id : null;
    const row = id ? $(`#tlist > .trow[data-id="${id}"]`) : null;
    const label = `${VERBS[action] || action} #${id}.`;
    body.delete("next");
    if (RESOLVING.has(action) && row) {
      const following = after(row);
      row.classList.add("pending");
      bumpCount(-1);
      openRow(following, false);
      schedule(label, async (leaving) => {
        await post(form.getAttribute("action"), body, leaving);
        row.remove();
      }, () => {
        row.classList.remove("pending");
        bumpCount(1);
        openRow(row, true);
      });
      return;
    }
    const saved = paneBox.innerHTML;
    $$("button, input, textarea, select", form).forEach((el) => { el.disabled = true; });
    schedule(`${label} ${action === "comment" ? "It stays open." : ""}`.trim(),
      async (leaving) => {
        const data = await post(form.getAttribute("action"), body, leaving);
        if (row && data.status) {
          row.dataset.version = data.version;
          row.classList.toggle("resolved", !data.waiting);
        }
        if (!leaving && row && row.classList.contains("current")) openRow(row, false);
      }, () => { paneBox.innerHTML = saved; });
  }

  // ---- bulk ------------------------------------------------------------------------------
  const picked = () => $$("#tlist > .trow:not(.pending) .pick:checked");
  function showPicked() {
    const n = picked().length;
    $("#picked").textContent = n ? `${n} selected` : "";
  }
  document.addEventListener("change", (ev) => {
    if (ev.target.classList && ev.target.classList.contains("pick")) showPicked();
  });
  function submitBulk(form, action) {
    const boxes = picked();
    if (!boxes.length) { say("Select tickets first (Space, or the boxes)."); return; }
    const ids = boxes.map((b) => b.value);
    const body = new FormData();
    body.set("csrf", form.elements.csrf.value);
    body.set("back", back);
    body.set("action", action);
    ids.forEach((id) => body.append("id", id));
    const chosen = ids.map((id) => $(`#tlist > .trow[data-id="${id}"]`));
    if (action === "read" || action === "unread") {
      post(form.getAttribute("action"), body).then(() => {
        chosen.forEach((r) => { r.classList.toggle("unread", action === "unread"); });
        boxes.forEach((b) => { b.checked = false; });
        showPicked();
        say(`Marked ${ids.length} ${action}.`);
      }).catch((err) => say(`Not sent: ${err.message}`, { error: true }));
      return;
    }
    const wasCurrent = chosen.includes(current());
    const following = wasCurrent ? rows().find((r) => !chosen.includes(r)) : null;
    chosen.forEach((r) => r.classList.add("pending"));
    bumpCount(-ids.length);
    if (wasCurrent) openRow(following, false);
    schedule(`${VERBS[action] || action} ${ids.length} ticket${ids.length === 1 ? "" : "s"}.`,
      async (leaving) => {
        const data = await post(form.getAttribute("action"), body, leaving);
        const failed = new Map((data.failed || []).map((f) => [String(f.id), f.detail]));
        chosen.forEach((r) => {
          if (failed.has(r.dataset.id)) {
            r.classList.remove("pending");
            $(".pick", r).checked = false;
          } else { r.remove(); }
        });
        bumpCount(failed.size);
        showPicked();
        if (failed.size) {
          say(`${ids.length - failed.size} of ${ids.length} done. Not done: ` +
            Array.from(failed, ([id, d]) => `#${id}: ${d}`).join("; "), { error: true });
        }
      }, () => {
        chosen.forEach((r) => r.classList.remove("pending"));
        bumpCount(ids.length);
        if (wasCurrent) openRow(chosen[0], false);
      });
  }

  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    // getAttribute: the form's fields named "id" and "action" shadow form.id/form.action.
    if (form.getAttribute("id") === "bulk") {
      ev.preventDefault();
      const button = ev.submitter;
      submitBulk(form, button ? button.value : "");
    } else if (form.classList.contains("act") && form.closest("#tpane")) {
      ev.preventDefault();
      submitAction(form);
    }
  });

  // ---- clicks: rows open in the pane -------------------------------------------------------
  document.addEventListener("click", (ev) => {
    const link = ev.target.closest ? ev.target.closest("a.ttitle") : null;
    if (link && !ev.ctrlKey && !ev.metaKey && !ev.shiftKey && ev.button === 0) {
      ev.preventDefault();
      openRow(link.closest(".trow"), true);
    } else if (ev.target.closest && ev.target.closest(".to-list") && narrow()) {
      ev.preventDefault();
      document.body.classList.remove("has-open");
      const row = current(); if (row) $(".ttitle", row).focus();
    }
  });
  $("#help-close").addEventListener("click", () => $("#help").classList.add("hidden"));

  // ---- keys ------------------------------------------------------------------------------
  function formOf(action) { return $(`#tpane form.act[data-action="${action}"]`); }
  function send(action) {
    const form = formOf(action);
    if (form) submitAction(form);
    else say(`No ${action} for this ticket.`);
  }
  function focusField(sel) {
    const el = $(sel);
    if (el) { el.focus(); return true; }
    return false;
  }
  function follow(sel) { const a = $(sel); if (a) location.href = a.href; return !!a; }
  const KEYS = {
    j: () => move(1), k: () => move(-1),
    a: () => send("approve"),
    d: () => focusField("#deny-reason") || say("No deny for this ticket."),
    e: () => follow("#do-edit") || say("Only approvals have a proposal to edit."),
    r: () => focusField("#reply-text") || follow("#do-reply") || say("No reply for this ticket."),
    c: () => focusField("#comment-body"),
    s: () => send("snooze"), x: () => send("done"), "#": () => send("cancel"),
    o: () => send("reopen"),
    g: () => focusField("#assign-to"), l: () => focusField("#label-add"),
    u: () => toggleRead(), z: () => undo(),
    " ": () => { const r = current(); if (r) { const b = $(".pick", r); b.checked = !b.checked; showPicked(); } },
    Enter: () => { const r = current(); if (r) location.href = `/t/${r.dataset.id}`; },
    "/": () => focusField("#tq"),
    "?": () => $("#help").classList.toggle("hidden"),
  };
  function toggleRead() {
    const row = current();
    if (!row) return;
    const unread = !row.classList.contains("unread");
    const body = new FormData();
    body.set("csrf", $('meta[name="csrf"]').content);
    body.set("read", unread ? "0" : "1");
    body.append("id", row.dataset.id);
    post("/triage/read", body).then(() => {
      row.classList.toggle("unread", unread);
      say(`#${row.dataset.id} marked ${unread ? "unread" : "read"}.`);
    }).catch((err) => say(`Not sent: ${err.message}`, { error: true }));
  }
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && t && t.form
        && t.form.classList.contains("act")) {  // Ctrl+Enter sends the field's form
      ev.preventDefault();
      t.form.requestSubmit();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) {
      if (ev.key === "Escape") t.blur();
      // Ctrl/Cmd+Enter is left to the browser; plain Enter in a one-line field submits.
      return;
    }
    if (ev.key === "Escape") { $("#help").classList.add("hidden"); return; }
    if (t && t.tagName === "BUTTON" && (ev.key === " " || ev.key === "Enter")) return;
    if (t && t.tagName === "A" && ev.key === "Enter" && !t.classList.contains("ttitle")) return;
    const handler = KEYS[ev.key];
    if (!handler) return;
    ev.preventDefault();
    ev.stopImmediatePropagation();
    handler();
  }, true);

  // ---- live: new tickets are offered, changed ones marked -----------------------------------
  if (window.EventSource && root.dataset.stream) {
    const source = new EventSource(root.dataset.stream);
    let fresh = 0;
    source.addEventListener("row", (ev) => {
      const data = JSON.parse(ev.data);
      if ($(`#tlist > .trow[data-id="${data.id}"]`)) return;
      fresh += 1;
      let note = $("#new-tickets");
      if (!note) {
        note = document.createElement("button");
        note.type = "button"; note.id = "new-tickets"; note.className = "new-tickets";
        note.addEventListener("click", () => { flush(); location.reload(); });
        $("#tlist").before(note);
      }
      note.textContent = `${fresh} new ticket${fresh === 1 ? "" : "s"}: show`;
    });
    source.addEventListener("status", (ev) => {
      const data = JSON.parse(ev.data);
      const row = $(`#tlist > .trow[data-id="${data.id}"]`);
      if (row) row.classList.toggle("resolved", !data.waiting);
    });
    // Someone else acted on a ticket in the list (message, answer, status): unread again,
    // as the server will say on the next load (store/web_marks.py).
    source.addEventListener("activity", (ev) => {
      const data = JSON.parse(ev.data);
      const row = $(`#tlist > .trow[data-id="${data.id}"]`);
      if (!row || row.classList.contains("unread")) return;
      row.classList.add("unread");
      const title = $(".ttitle", row);
      const num = title && $(".num", title);
      if (num && !$(".dot", title)) {
        const dot = document.createElement("span");
        dot.className = "dot"; dot.title = "unread";
        const sr = document.createElement("span");
        sr.className = "sr-only"; sr.textContent = "unread: ";
        title.insertBefore(dot, num); title.insertBefore(sr, num);
      }
    });
  }

  const first = current() || rows()[0];
  if (first && !current()) first.classList.add("current");
})();
