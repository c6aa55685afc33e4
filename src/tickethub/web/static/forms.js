// tickethub forms: in-page checks that say every problem at once, in the server's words.
// Checks run when the form is sent (never on blur: an error that appears while the
// pointer is on its way to "Send" would move the button and eat the click); a field
// that shows an error is re-checked while it is fixed. The server checks everything again.
(function () {
  "use strict";
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const label = (el) => el.dataset.label || "This field";

  function range(el) {
    const min = el.getAttribute("min"), max = el.getAttribute("max");
    if (min !== null && max !== null) return `from ${min} to ${max}`;
    if (min !== null) return `at least ${min}`;
    if (max !== null) return `at most ${max}`;
    return "";
  }

  function message(el) {
    const type = el.dataset.type, name = label(el);
    if (type === "yesno") {
      return el.dataset.required && !el.querySelector("input:checked") ? `${name}: choose yes or no.` : "";
    }
    const value = el.value.trim();
    if (el.validity && el.validity.badInput) return type === "integer" ? `${name} must be a whole number.` : `${name} must be a number.`;
    if (!value) return el.dataset.required ? `${name} is required.` : "";
    if (type === "integer" || type === "number") {
      const n = Number(value);
      if (!Number.isFinite(n)) return `${name} must be a number.`;
      if (type === "integer" && !Number.isInteger(n)) return `${name} must be a whole number.`;
      if ((el.min !== "" && n < Number(el.min)) || (el.max !== "" && n > Number(el.max))) return `${name} must be ${range(el)}.`;
    }
    if (type === "json") { try { JSON.parse(value); } catch (e) { return `${name} must be valid JSON.`; } }
    const min = el.getAttribute("minlength"), max = el.getAttribute("maxlength");
    if (min && value.length < Number(min)) return `${name} must be at least ${min} characters.`;
    if (max && value.length > Number(max)) return `${name} must be up to ${max} characters.`;
    const pattern = el.getAttribute("pattern");
    const limits = document.getElementById(`${el.id}-limits`);
    const like = limits && /like (.+)\.$/i.exec(limits.textContent);
    if (pattern) {
      try {
        if (!new RegExp(`^(?:${pattern})$`, "u").test(value)) return like ? `${name} must look like ${like[1]}.` : `${name} is not in the expected form.`;
      } catch (e) { /* the server checks it */ }
    }
    if (type === "email" && el.validity && el.validity.typeMismatch) return `${name} must look like name@example.org.`;
    if (type === "url" && el.validity && el.validity.typeMismatch) return `${name} must look like https://example.org/page.`;
    return "";
  }

  function show(el, problem) {
    const out = document.getElementById(`${el.id}-error`);
    if (out) out.textContent = problem;
    if (problem) el.setAttribute("aria-invalid", "true"); else el.removeAttribute("aria-invalid");
  }

  function summarize(form, problems) {
    const box = form.parentElement.querySelector("[data-summary]");
    if (!box) return;
    box.textContent = "";
    box.classList.toggle("hidden", !problems.length);
    if (!problems.length) return;
    const head = document.createElement("p");
    const strong = document.createElement("strong");
    strong.textContent = `${problems.length} ${problems.length === 1 ? "thing needs" : "things need"} fixing before this can be sent:`;
    head.append(strong);
    const list = document.createElement("ul");
    problems.forEach(([el, text]) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = `#${el.id}`;
      link.textContent = text;
      item.append(link);
      list.append(item);
    });
    box.append(head, list);
  }

  const checked = (form) => $$("input[id], textarea[id], select[id], fieldset[data-type]", form)
    .filter((el) => el.dataset.type || el.dataset.required);

  function denying(form, ev) {
    const comment = form.querySelector("#comment");
    const problem = comment && !comment.value.trim() ? "Say why you deny it, so the agent can do better." : "";
    if (comment) show(comment, problem);
    return problem ? [[comment, problem]] : [];
  }

  $$("form[novalidate]").forEach((form) => {
    checked(form).forEach((el) => {
      const recheck = () => { if (el.getAttribute("aria-invalid")) show(el, message(el)); };
      el.addEventListener("input", recheck);
      if (el.tagName === "FIELDSET" || el.tagName === "SELECT") el.addEventListener("change", recheck);
    });
    const comment = form.querySelector("#comment");
    if (comment) comment.addEventListener("input", () => { if (comment.getAttribute("aria-invalid") && comment.value.trim()) show(comment, ""); });
    form.addEventListener("submit", (ev) => {
      const by = ev.submitter;
      let problems;
      if (by && by.hasAttribute("data-deny")) problems = denying(form, ev);
      else if (by && by.name === "edit" && by.value === "0") problems = [];  // the proposal as it is
      else {
        problems = [];
        checked(form).forEach((el) => { const p = message(el); show(el, p); if (p) problems.push([el, p]); });
      }
      if (problems.length) {
        ev.preventDefault();
        summarize(form, problems);
        const first = problems[0][0];
        (first.tagName === "FIELDSET" ? first.querySelector("input") : first).focus();
      }
    });
  });
})();
