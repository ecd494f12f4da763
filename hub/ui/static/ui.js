// Small DOM helpers: elements, usage bars, per-minute charts with text alternatives.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function link(href, text, attrs = {}) { return h("a", { href, ...attrs }, text); }

export function state(s) { return h("span", { class: `state ${s}` }, s); }

// A usage bar: used part of the quota in blue, what is borrowed beyond it in purple; its text says the same.
export function bar(label, used, quota, borrowed = 0, usageText = "", quotaText = "") {
  const total = Math.max(quota, used, 1);
  const pct = (v) => `${Math.min(100, (100 * v) / total).toFixed(1)}%`;
  const own = used - borrowed;
  const share = quota > 0 ? Math.round((100 * used) / quota) : 0;
  const text = `${label}: ${usageText || used} of ${quotaText || quota}` + (quota > 0 ? ` (${share}%)` : "")
    + (borrowed > 0 ? `, borrowing beyond its quota` : "");
  return h("span", { class: "barwrap" },
    h("span", { class: "bar", role: "img", "aria-label": text, title: text },
      h("span", { class: "used", style: `width:${pct(own)}` }),
      borrowed > 0 ? h("span", { class: "borrowed", style: `left:${pct(own)};width:${pct(borrowed)}` }) : null),
    h("span", { class: "barlabel" }, `${usageText || used}/${quotaText || quota}` + (quota > 0 ? ` (${share}%)` : "")));
}

// A per-minute column chart (oldest first); the figure's caption and aria-label say what it shows in words.
export function minuteChart(title, values, cls) {
  const width = 300, height = 60, n = values.length, peak = Math.max(1, ...values);
  const total = values.reduce((a, b) => a + b, 0);
  const last10 = values.slice(-10).reduce((a, b) => a + b, 0);
  const summary = `${title} over the last hour: ${total} in total, ${last10} in the last 10 minutes, `
    + `at most ${Math.max(0, ...values)} in one minute.`;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", summary);
  const t = document.createElementNS(svg.namespaceURI, "title");
  t.textContent = summary;
  svg.append(t);
  values.forEach((v, i) => {
    const r = document.createElementNS(svg.namespaceURI, "rect");
    const bh = (v / peak) * (height - 2);
    r.setAttribute("x", (i * width) / n);
    r.setAttribute("y", height - bh);
    r.setAttribute("width", Math.max(1, width / n - 1));
    r.setAttribute("height", bh);
    r.setAttribute("class", cls);
    svg.append(r);
  });
  return h("figure", { class: "minutechart" }, svg, h("figcaption", {}, summary));
}

// Arrow keys move between the focusable links of a table's rows (Tab still walks every control).
export function rowKeys(tbody) {
  tbody.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const links = [...tbody.querySelectorAll("tr a.rowlink")];
    const i = links.indexOf(document.activeElement);
    if (i < 0) return;
    const next = links[e.key === "ArrowDown" ? Math.min(links.length - 1, i + 1) : Math.max(0, i - 1)];
    next.focus();
    e.preventDefault();
  });
}

export function ago(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  if (seconds < 60) return `${Math.round(seconds)}s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}m ago`;
  return `${Math.round(seconds / 3600)}h ago`;
}

// Redraw keeping the keyboard's place: the control that had the focus (the same target, not the same
// text: a count's link shows a new number) gets it back in the new drawing.
export async function keepFocus(container, draw) {
  const controls = () => [...container.querySelectorAll("a, button, input, select")];
  const name = (el) => `${el.tagName}|${el.getAttribute("href") || ""}|${el.id}`;
  const active = document.activeElement;
  let had = null;
  if (container.contains(active) && active !== container) {
    const same = controls().filter((el) => name(el) === name(active));
    had = [name(active), same.indexOf(active)];
  }
  await draw();
  if (had === null) return;
  const again = controls().filter((el) => name(el) === had[0])[had[1]];
  if (again) again.focus();
}
