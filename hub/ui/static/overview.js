// Overview: workload counts, ClusterQueues with quota/usage/borrowing bars, the cohort tree, activity charts.
import { get } from "./api.js";
import { bar, h, link, minuteChart } from "./ui.js";

function cohortNode(node) {
  const res = node.resources.map((r) =>
    h("li", {}, h("span", { class: "muted" }, `${r.flavor} · ${r.resource} `), bar(`${node.name} ${r.flavor}/${r.resource}`, r.usageValue, r.quotaValue,
      Math.max(0, r.usageValue - r.quotaValue), r.usage, r.quota),
      r.lendingLimit !== null ? h("span", { class: "muted" }, ` lending limit ${r.lendingLimit}`) : null,
      r.borrowing !== "0" ? h("span", { class: "muted" }, ` borrowing ${r.borrowing}`) : null));
  return h("li", {}, h("span", { class: "kind" }, node.kind), h("strong", {}, node.name),
    res.length ? h("ul", {}, res) : null,
    node.children.length ? h("ul", {}, node.children.map(cohortNode)) : null);
}

export async function overview(main, current = () => true) {
  const data = await get("/api/v1/overview");
  if (!current()) return;  // the user moved on while it was read
  const w = data.workloads, s = data.states;
  const card = (n, label, href) => h("div", { class: "card" },
    h("span", { class: "n", "data-count": label }, href ? link(href, String(n)) : String(n)), h("span", { class: "l" }, label));
  const rows = data.clusterQueues.map((cq) => h("tr", { "data-cq": cq.name },
    h("td", {}, h("strong", {}, cq.name), cq.active ? null : h("div", { class: "error" }, cq.inactiveReason)),
    h("td", {}, cq.cohort || "—"),
    h("td", { class: "num" }, cq.pending ? link(`/workloads?state=pending&sort=created`, String(cq.pending),
      { "data-pending": cq.name, "aria-label": `${cq.pending} pending in ${cq.name}` }) : "0"),
    h("td", { class: "num" }, String(cq.admitted)),
    h("td", {}, cq.resources.map((r) => h("div", { "data-resource": `${r.flavor}/${r.resource}` },
      h("span", { class: "muted" }, `${r.flavor} · ${r.resource} `),
      bar(`${cq.name} ${r.flavor}/${r.resource}`, r.usageValue, r.nominalValue, r.borrowedValue, r.usage, r.nominal))))));
  main.replaceChildren(
    h("h1", {}, "Overview"),
    h("div", { class: "cards" },
      card(w.pending, "pending", "/workloads?state=pending"), card(w.admitted, "admitted", "/workloads?state=running"),
      card(w.finished, "finished", "/workloads?state=finished"), card(w.total, "total", "/workloads")),
    h("h2", {}, "Activity"),
    h("div", { class: "charts" },
      minuteChart("Admissions", data.activity.admitted, "a"), minuteChart("Evictions", data.activity.evicted, "e")),
    h("h2", {}, "ClusterQueues"),
    data.clusterQueues.length
      ? h("table", { id: "cqs" }, h("thead", {}, h("tr", {}, ["ClusterQueue", "Cohort", "Pending", "Admitted",
        "Usage / quota per flavor and resource (purple: borrowed)"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows))
      : h("p", {}, "No ClusterQueues yet."),
    h("h2", {}, "Cohorts"),
    data.cohorts.length ? h("ul", { class: "tree", id: "cohorts" }, data.cohorts.map(cohortNode))
      : h("p", { class: "muted" }, "No cohorts: every ClusterQueue stands alone."));
}
