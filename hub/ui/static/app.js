// The dashboard's router: one page per path, links handled without a reload, one live stream shared by pages.
import { AuthError, follow, forgetToken, setToken, tokenFromFragment } from "./api.js";
import { detail } from "./detail.js";
import { fleet } from "./fleet.js";
import { overview } from "./overview.js";
import { h, keepFocus } from "./ui.js";
import { workloads } from "./workloads.js";

const main = document.getElementById("main");
const liveState = document.getElementById("live");
let listeners = [];
let stopLive = null;
let generation = 0;  // which route() drew the page: refreshes of an older one are dropped
const live = { on: (fn) => listeners.push(fn) };

function startLive() {
  if (stopLive) return;
  stopLive = follow((message) => {
    liveState.textContent = `live · ${message.counts ? `${message.counts.pending} pending` : ""}`;
    liveState.dataset.version = message.version;
    for (const fn of listeners) fn(message);
  }, (s) => { liveState.textContent = s; });
}

function login(message) {
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true });
  main.replaceChildren(h("form", { class: "login", onsubmit: (e) => {
    e.preventDefault();
    setToken(input.value);
    route();
  } }, h("h1", {}, "Sign in"), h("p", {}, message),
  h("label", { for: "token" }, "Dashboard token (from `mkhub ui token`)"), input, h("button", { type: "submit" }, "Open")));
  input.focus();
}

async function route() {
  listeners = [];
  generation += 1;
  const path = location.pathname;
  for (const a of document.querySelectorAll("nav a")) {
    const page = a.dataset.page;
    const current = (page === "overview" && path === "/") || (page !== "overview" && path.startsWith(`/${page}`))
      || (page === "workloads" && path.startsWith("/workload/"));
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  try {
    const m = path.match(/^\/workload\/([^/]+)\/([^/]+)$/);
    if (m) await detail(main, decodeURIComponent(m[1]), decodeURIComponent(m[2]), live);
    else if (path.startsWith("/workloads")) await workloads(main, live);
    else if (path.startsWith("/fleet")) { await fleet(main); refreshOn((current) => fleet(main, current), 2000); }
    else { await overview(main); refreshOn((current) => overview(main, current), 1000); }
    document.title = `mkhub · ${main.querySelector("h1")?.textContent || ""}`;
    startLive();
  } catch (e) {
    if (e instanceof AuthError) { forgetToken(); login(e.message); return; }
    main.replaceChildren(h("p", { class: "error", role: "alert" }, e.message));
  }
}

// Pages without rows to patch are read again after a change, at most once per interval, keeping the focus;
// never once the user has moved to another page (a late redraw would put the old page back over the new one).
function refreshOn(load, interval) {
  const gen = generation;
  const current = () => gen === generation;
  let timer = null;
  live.on(() => {
    if (!timer) timer = setTimeout(() => { timer = null; if (current()) keepFocus(main, () => load(current)).catch(() => {}); }, interval);
  });
}

document.addEventListener("click", (e) => {
  const a = e.target.closest("a");
  if (!a || a.target || e.ctrlKey || e.metaKey || e.shiftKey || a.origin !== location.origin) return;
  if (a.getAttribute("href").startsWith("#")) return;
  e.preventDefault();
  history.pushState(null, "", a.href);
  route().then(() => main.focus());
});
window.addEventListener("popstate", route);
tokenFromFragment();
route();
