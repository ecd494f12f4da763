// Workload detail: where it stands and why, conditions, assignment per pod set, admission checks, events, logs.
import { get } from "./api.js";
import { h, keepFocus, link, state } from "./ui.js";

function table(id, columns, rows) {
  if (!rows.length) return h("p", { class: "muted", id }, "None.");
  return h("table", { id }, h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))));
}

export async function detail(main, namespace, name, live) {
  const base = `/api/v1/workloads/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
  async function load() {
    const d = await get(base);
    const row = d.row || {};
    const why = row.state === "pending" || row.state === "inactive"
      ? h("section", { class: "why", id: "why", "aria-labelledby": "why-title" },
        h("h2", { id: "why-title" }, "Why pending"),
        h("p", { id: "explanation" }, d.explanation),
        d.positionInClusterQueue !== null
          ? h("p", {}, `Position ${d.positionInClusterQueue + 1} in its ClusterQueue, ${d.positionInLocalQueue + 1} in its LocalQueue; `
            + `${d.aheadCount} workload${d.aheadCount === 1 ? "" : "s"} ahead.`) : null,
        d.ahead.length ? h("ol", { id: "ahead", "aria-label": "workloads ahead of it" }, d.ahead.map((a) => h("li", {},
          link(`/workload/${a.metadata.namespace}/${a.metadata.name}`, `${a.metadata.namespace}/${a.metadata.name}`),
          ` (priority ${a.priority}, LocalQueue ${a.localQueueName})`))) : null)
      : h("p", { id: "explanation" }, d.explanation);
    const logs = h("pre", { class: "logs", id: "logs", hidden: true });
    const logButton = h("button", { type: "button", onclick: async () => {
      logs.hidden = false;
      logs.textContent = "loading…";
      try {
        const l = await get(`${base}/logs`);
        logs.textContent = l.lines.map((x) => `[${x.pod}] ${x.line}`).join("\n") || "(no lines)";
      } catch (e) { logs.textContent = e.message; }
    } }, "Show logs");
    main.replaceChildren(
      h("p", {}, link("/workloads", "← Workloads")),
      h("h1", {}, `${namespace}/${name} `, state(row.state || "unknown")),
      h("dl", { class: "cards" },
        ...[["Queue", d.queue], ["ClusterQueue", d.clusterQueue || (d.queueUsage ? d.queueUsage.name : "—")], ["Worker", d.worker || "—"],
          ["Priority", d.priority ?? 0], ["Owner", row.owner ? `${row.kind}/${row.owner}` : "—"]]
          .map(([k, v]) => h("div", { class: "card" }, h("dt", { class: "l" }, k), h("dd", { class: "n", style: "margin:0;font-size:15px", "data-field": k }, String(v))))),
      why,
      h("h2", {}, "Conditions"),
      table("conditions", ["Type", "Status", "Reason", "Message", "Since"],
        d.conditions.map((c) => [c.type, c.status, c.reason || "", c.message || "", c.lastTransitionTime || ""])),
      h("h2", {}, "Pod sets and assignment"),
      table("podsets", ["Pod set", "Count", "Flavors", "Usage", "Topology"],
        d.podSets.map((p) => [p.name, String(p.count), Object.entries(p.flavors).map(([r, f]) => `${r}: ${f}`).join(", ") || "not assigned",
          Object.entries(p.resourceUsage).map(([r, q]) => `${r}: ${q}`).join(", "), p.topologyAssignment ? JSON.stringify(p.topologyAssignment) : "—"])),
      h("h2", {}, "Admission checks"),
      table("checks", ["Check", "State", "Message"], d.admissionChecks.map((c) => [c.name, c.state, c.message || ""])),
      h("h2", {}, "Events"),
      table("events", ["Type", "Reason", "Message", "Count", "Last seen"],
        d.events.map((e) => [e.type, e.reason, e.message, String(e.count), new Date(e.time * 1000).toISOString().replace(/\.\d+Z$/, "Z")])),
      h("h2", {}, "Logs"),
      d.worker ? h("div", {}, logButton, logs) : h("p", { class: "muted" }, "Logs come from the worker it runs on; it runs on none."));
  }
  let timer = null;
  live.on((message) => {
    const mine = (message.rows || []).some((r) => r.namespace === namespace && r.name === name);
    if ((mine || message.reload) && !timer) timer = setTimeout(() => { timer = null; keepFocus(main, load).catch(() => {}); }, 300);
  });
  return load();
}
