// Workloads: filters, sortable columns, server-side pages. Rows are kept by workload and patched in place:
// live messages update the visible rows' cells; the page is re-read (throttled) for rows that came or went.
import { get } from "./api.js";
import { h, link, rowKeys, state } from "./ui.js";

const LIMIT = 50;
const COLUMNS = [
  ["name", "Workload"], ["namespace", "Namespace"], ["queue", "Queue"], ["state", "State"], [null, "Kind"],
  [null, "Worker"], ["priority", "Priority"], ["created", "Created"], [null, "Reason / position"],
];
const FILTERS = ["namespace", "queue", "state", "kind", "worker"];
const STATES = ["", "pending", "reserved", "admitted", "running", "finished", "inactive"];

function cells(r) {
  const position = r.positionInClusterQueue !== undefined
    ? `#${r.positionInClusterQueue + 1} in ClusterQueue, #${r.positionInLocalQueue + 1} in LocalQueue` : "";
  return [
    link(`/workload/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}`, r.name, { class: "rowlink" }),
    r.namespace, r.queue, state(r.state), r.owner ? `${r.kind}/${r.owner}` : r.kind, r.worker || "—",
    String(r.priority), r.created.replace("T", " ").replace(/\.\d+Z$|Z$/, ""),
    h("div", { class: "reason" }, position ? h("div", {}, position) : null, r.reason),
  ];
}

export function workloads(main, live) {
  const params = new URLSearchParams(location.search);
  const tbody = h("tbody", {});
  const rows = new Map(); // key -> {tr, json}
  const status = h("span", { role: "status", "aria-live": "polite", id: "pageinfo" });
  const prev = h("button", { type: "button", onclick: () => move(-1) }, "← Previous");
  const next = h("button", { type: "button", onclick: () => move(1) }, "Next →");
  let total = 0;
  rowKeys(tbody);

  function query() {
    const q = new URLSearchParams();
    for (const f of FILTERS) if (params.get(f)) q.set(f, params.get(f));
    q.set("sort", params.get("sort") || "created");
    q.set("offset", params.get("offset") || "0");
    q.set("limit", String(LIMIT));
    return q;
  }

  function render(r, tr) {
    const key = `${r.namespace}/${r.name}`;
    const fresh = tr || h("tr", { "data-key": key });
    const parts = cells(r);
    if (!tr) fresh.append(...parts.map((c) => h("td", {}, c)));
    else parts.forEach((c, i) => {
      const td = fresh.children[i];
      const text = c instanceof Node ? c.textContent : String(c);
      if (td.textContent !== text) td.replaceChildren(c);
    });
    fresh.dataset.state = r.state;
    return fresh;
  }

  async function load() {
    const page = await get(`/api/v1/workloads?${query()}`);
    total = page.total;
    const keep = new Set();
    let before = tbody.firstChild;
    for (const r of page.items) {
      const key = `${r.namespace}/${r.name}`;
      keep.add(key);
      const known = rows.get(key);
      const tr = render(r, known ? known.tr : null);
      rows.set(key, { tr, json: r });
      if (tr !== before) tbody.insertBefore(tr, before); else before = before.nextSibling;
    }
    for (const [key, v] of rows) if (!keep.has(key)) { v.tr.remove(); rows.delete(key); }
    const offset = page.offset;
    status.textContent = total
      ? `${offset + 1}–${Math.min(total, offset + page.items.length)} of ${total}` : "No workloads match.";
    prev.disabled = offset === 0;
    next.disabled = offset + LIMIT >= total;
    performance.mark("mkhub:rows"); // the rows are drawn and the pager works (mkhub bench ui reads it)
    positions(page.items.filter((r) => r.state === "pending").map((r) => `${r.namespace}/${r.name}`));
  }

  // Queue positions of the pending rows, asked for once the rows are drawn (ordering a queue costs the hub a sort).
  async function positions(keys) {
    if (!keys.length) return;
    const found = (await get(`/api/v1/positions?workloads=${encodeURIComponent(keys.join(","))}`)).positions;
    for (const [key, p] of Object.entries(found)) {
      const known = rows.get(key);
      if (!known || known.json.state !== "pending") continue;
      known.json = { ...known.json, positionInClusterQueue: p.clusterQueue, positionInLocalQueue: p.localQueue };
      render(known.json, known.tr);
    }
  }

  function navigate() {
    history.replaceState(null, "", `/workloads?${[...params].length ? params : ""}`);
    load().catch((e) => { status.textContent = e.message; });
  }

  function move(step) {
    const offset = Math.max(0, (parseInt(params.get("offset") || "0", 10) || 0) + step * LIMIT);
    params.set("offset", String(offset));
    navigate();
  }

  function sortBy(field) {
    const current = params.get("sort") || "created";
    params.set("sort", current === field ? `-${field}` : field);
    params.set("offset", "0");
    navigate();
    main.querySelectorAll("th[aria-sort]").forEach((th) => th.setAttribute("aria-sort",
      th.dataset.sort === field ? (current === field ? "descending" : "ascending") : "none"));
  }

  const filterControls = FILTERS.map((f) => {
    const control = f === "state"
      ? h("select", { name: f, id: `filter-${f}` }, STATES.map((s) => h("option", { value: s, selected: params.get(f) === s }, s || "any")))
      : h("input", { name: f, id: `filter-${f}`, value: params.get(f) || "", placeholder: "any", size: 12 });
    control.addEventListener("change", () => {
      if (control.value) params.set(f, control.value); else params.delete(f);
      params.set("offset", "0");
      navigate();
    });
    return h("label", { for: `filter-${f}` }, f, control);
  });

  const sortField = (params.get("sort") || "created").replace(/^-/, "");
  const head = h("tr", {}, COLUMNS.map(([field, title]) => field
    ? h("th", { scope: "col", "data-sort": field,
      "aria-sort": field === sortField ? ((params.get("sort") || "").startsWith("-") ? "descending" : "ascending") : "none" },
      h("button", { type: "button", onclick: () => sortBy(field) }, title))
    : h("th", { scope: "col" }, title)));

  main.replaceChildren(h("h1", {}, "Workloads"), h("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, filterControls),
    h("table", { id: "workloads" }, h("thead", {}, head), tbody), h("div", { class: "pager" }, prev, next, status));

  // Live: patch the rows on this page at once; re-read the page at most every 2 s for rows that came or went.
  let timer = null;
  live.on((message) => {
    for (const r of message.rows || []) {
      const known = rows.get(`${r.namespace}/${r.name}`);
      if (known) {
        // The live row is whole but for queue positions, which only a pending row keeps (re-read with the page).
        const keep = r.state === "pending" && known.json.positionInClusterQueue !== undefined;
        known.json = keep ? { ...r, positionInClusterQueue: known.json.positionInClusterQueue,
          positionInLocalQueue: known.json.positionInLocalQueue } : r;
        render(known.json, known.tr);
      }
    }
    if (!timer) timer = setTimeout(() => { timer = null; load().catch(() => {}); }, 2000);
  });
  return load();
}
