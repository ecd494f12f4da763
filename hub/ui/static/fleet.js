// Fleet: every worker (connected or not), heartbeat age, its queues' quota and usage, copies sent and won,
// and the workloads the hub gave up on.
import { get } from "./api.js";
import { ago, bar, h, link } from "./ui.js";

function quantity(text) {
  const m = String(text).match(/^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G)?$/);
  if (!m) return 0;
  const scale = { m: 1e-3, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9 }[m[2]] || 1;
  return parseFloat(m[1]) * scale;
}

export async function fleet(main, current = () => true) {
  const data = await get("/api/v1/fleet");
  if (!current()) return;  // the user moved on while it was read
  const rows = data.workers.map((w) => h("tr", { "data-worker": w.name },
    h("td", {}, h("strong", {}, w.name)),
    h("td", {}, h("span", { class: `dot ${w.connected ? "on" : "off"}`, "aria-hidden": "true" }),
      w.connected ? "connected" : "disconnected", w.active ? "" : " (inactive)"),
    h("td", { "data-heartbeat": "" }, ago(w.lastHeardSeconds)),
    h("td", { class: "num" }, String(w.pending)), h("td", { class: "num" }, String(w.admitted)),
    h("td", { class: "num" }, link(`/workloads?worker=${encodeURIComponent(w.name)}`, String(w.running),
      { "aria-label": `${w.running} running on ${w.name}` })),
    h("td", { class: "num", "data-sent": "" }, String(w.copiesSent)),
    h("td", { class: "num", "data-won": "" }, String(w.copiesWon)),
    h("td", { class: "num" }, w.dispatchToStartSeconds === null ? "—" : `${w.dispatchToStartSeconds}s`),
    h("td", {}, w.quota.length ? w.quota.map((q) => h("div", {},
      h("span", { class: "muted" }, `${q.clusterQueue} · ${q.flavor} · ${q.resource} `),
      bar(`${w.name} ${q.flavor}/${q.resource}`, quantity(q.usage), quantity(q.nominal), 0, q.usage, q.nominal)))
      : h("span", { class: "muted" }, w.capacityReports ? "no quota" : "no capacity reports"))));
  main.replaceChildren(
    h("h1", {}, "Fleet"),
    data.workers.length
      ? h("table", { id: "workers" }, h("thead", {}, h("tr", {}, ["Worker", "Link", "Last heartbeat", "Pending", "Admitted",
        "Running", "Copies sent", "Copies won", "Dispatch → start", "Quota and usage"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows))
      : h("p", {}, "No workers (MultiKueueClusters): a standalone hub."),
    h("h2", {}, "Given up"),
    data.givenUp.length
      ? h("table", { id: "givenup" }, h("thead", {}, h("tr", {}, ["Workload", "ClusterQueue", "Why"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, data.givenUp.map((g) => h("tr", {},
          h("td", {}, link(`/workload/${g.namespace}/${g.name}`, `${g.namespace}/${g.name}`)),
          h("td", {}, g.clusterQueue || "—"), h("td", {}, g.reason)))))
      : h("p", { class: "muted" }, "No workload was given up."));
}
