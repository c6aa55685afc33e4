// tickethub live pages: streams that notice a session ending, and new inbox rows placed
// where the page's sort puts them. Loaded before app.js, which opens the streams.
(function () {
  "use strict";
  const hub = (window.tickethub = window.tickethub || {});
  const streams = [];
  let ended = false;

  // ---- "session ended — sign in again" ------------------------------------------------
  function sessionEnded() {
    if (ended) return;
    ended = true;
    streams.forEach((s) => s.close());
    const banner = document.createElement("div");
    banner.className = "banner session-ended";
    banner.id = "session-ended";
    banner.setAttribute("role", "alert");
    const link = document.createElement("a");
    link.href = `/login?next=${encodeURIComponent(location.pathname + location.search)}`;
    link.textContent = "sign in again";
    banner.append("Your session ended — ", link, " to see new tickets and answer.");
    const main = document.getElementById("main") || document.body;
    main.prepend(banner);
    document.querySelectorAll("form[method=post] button[type=submit]").forEach((b) => { if (!b.closest(".top")) b.disabled = true; });
  }

  async function probe() {
    try {
      const response = await fetch("/session", { credentials: "same-origin", cache: "no-store" });
      const state = await response.json();
      if (!state.signed_in) sessionEnded();
    } catch (e) { /* offline: EventSource keeps retrying */ }
  }

  // Sign-out in another tab of this browser tells the others at once; the server's
  // stream also says "signed-out" at its next keep-alive, and a refused reconnect
  // (401) is checked with /session.
  const channel = window.BroadcastChannel ? new BroadcastChannel("tickethub-session") : null;
  if (channel) channel.onmessage = (ev) => { if (ev.data === "signed-out") probe(); };
  document.querySelectorAll('form[action="/logout"]').forEach((form) => {
    form.addEventListener("submit", () => { if (channel) channel.postMessage("signed-out"); });
  });

  hub.stream = function (url) {
    const source = new EventSource(url);
    streams.push(source);
    source.addEventListener("signed-out", () => { source.close(); sessionEnded(); });
    source.addEventListener("error", () => { if (source.readyState === EventSource.CLOSED) probe(); });
    return source;
  };

  // ---- new rows in sort order ---------------------------------------------------------
  function sortOf(list) {
    const holder = list.closest("[data-stream]");
    const params = new URLSearchParams(holder ? holder.dataset.stream.split("?")[1] || "" : location.search);
    return params.get("sort") || "newest";
  }
  function key(row, due) {
    let at = due;
    if (at === undefined) {
      const attr = row.dataset.due || (row.querySelector("time.due") || {}).dateTime;
      at = attr || null;
    }
    return { due: at ? Date.parse(at) : Infinity, id: Number(row.dataset.id) };
  }
  // Negative when a comes first: urgent is due date ascending (none last), then newest.
  function before(sort, a, b) {
    if (sort === "urgent" && a.due !== b.due) return a.due < b.due ? -1 : 1;
    return b.id - a.id;
  }

  /** Put ``row`` into ``list`` where the page's sort puts it; false when it belongs on a
   *  later page (after the last row shown while there is a next page). */
  hub.placeRow = function (list, row, data) {
    const sort = sortOf(list);
    const mine = key(row, data && "due_at" in data ? data.due_at : undefined);
    const rows = Array.from(list.children).filter((el) => el.classList.contains("row"));
    const next = rows.find((el) => before(sort, mine, key(el)) < 0);
    if (next) { list.insertBefore(row, next); return true; }
    if (rows.length && document.querySelector('a[rel="next"]')) return false;
    list.append(row);
    return true;
  };
})();
