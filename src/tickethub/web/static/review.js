// tickethub approval review: the proposal is a form; every value changed from the
// original is highlighted (with what it was), and the decision bar says what will be
// approved ("Changes: replicas 4 → 6"). The server computes the same diff on approval.
(function () {
  "use strict";
  const form = document.querySelector("form[data-review]");
  if (!form) return;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const boxes = $$("[data-original]", form);
  const line = document.getElementById("changes");
  const approve = document.getElementById("approve-button");
  const edited = document.getElementById("approve-edited-button");

  function canonical(value) {
    if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
    if (value && typeof value === "object") {
      return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
    }
    return JSON.stringify(value);
  }
  const json = (text) => { try { return canonical(JSON.parse(text)); } catch (e) { return text; } };

  function current(box) {
    const widget = box.dataset.widget;
    if (widget === "select") return box.querySelector("select").value;
    if (widget === "checkbox") return box.querySelector("input").checked ? "true" : "false";
    if (widget === "yesno") { const on = box.querySelector("input:checked"); return on ? on.value : ""; }
    if (widget === "choices") return $$("input:checked", box).map((el) => el.value).join(",");
    return box.querySelector("input, textarea").value;
  }

  function same(box, a, b) {
    const widget = box.dataset.widget;
    if (widget === "integer" || widget === "number") {
      return a.trim() === b.trim() || (a.trim() !== "" && b.trim() !== "" && Number(a) === Number(b));
    }
    if (widget === "json") return json(a) === json(b);
    if (widget === "lines") return a.split("\n").map((s) => s.trim()).filter(Boolean).join("\n") === b.split("\n").map((s) => s.trim()).filter(Boolean).join("\n");
    return a === b;
  }

  function shown(box, value) {
    const widget = box.dataset.widget;
    if (value === "") return "empty";
    if (widget === "select") {
      const option = box.querySelector(`option[value="${CSS.escape(value)}"]`);
      return option ? option.textContent : value;
    }
    if (widget === "checkbox" || widget === "yesno") return value === "true" ? "yes" : "no";
    if (widget === "choices") {
      return value.split(",").map((i) => { const el = box.querySelector(`input[value="${CSS.escape(i)}"]`); return el ? el.parentElement.textContent.trim() : i; }).join(", ");
    }
    if (widget === "json") return "(edited JSON)";
    const text = value.replace(/\s+/g, " ").trim();
    return text.length > 40 ? `${text.slice(0, 39)}…` : text;
  }

  function update() {
    const changes = [];
    boxes.forEach((box) => {
      const was = box.dataset.original, now = current(box);
      const changed = !same(box, was, now);
      box.classList.toggle("changed", changed);
      let note = box.querySelector(":scope > .was-note");
      if (changed) {
        if (!note) {
          note = document.createElement("span");
          note.className = "was-note";
          const head = box.querySelector(":scope > label, :scope > legend");
          (head || box).append(note);
        }
        note.textContent = box.dataset.widget === "json" ? " changed" : ` was ${shown(box, was)}`;
        const where = box.dataset.path || "value";
        changes.push(box.dataset.widget === "json" ? `${where} changed` : `${where} ${shown(box, was)} → ${shown(box, now)}`);
      } else if (note) note.remove();
    });
    line.textContent = changes.length ? `Changes: ${changes.join("; ")}` : "No changes: approving as proposed.";
    line.classList.toggle("has-changes", changes.length > 0);
    form.dataset.changes = String(changes.length);
    approve.classList.toggle("primary", !changes.length);
    edited.classList.toggle("primary", changes.length > 0);
    return changes;
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  form.addEventListener("submit", (ev) => {
    const by = ev.submitter;
    const changes = update();
    if (by === approve && changes.length) {
      ev.preventDefault();
      line.textContent = `You changed ${changes.join("; ")}. Choose “Approve with changes” to approve your version, or undo the changes.`;
      edited.focus();
    }
  });
  update();
})();
