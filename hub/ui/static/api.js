// The dashboard's API client: the bearer token (kept in sessionStorage), JSON reads, the live event stream.
const KEY = "mkhub-ui-token";

export class AuthError extends Error {}

export function token() { return sessionStorage.getItem(KEY) || ""; }
export function setToken(value) { sessionStorage.setItem(KEY, value.trim()); }
export function forgetToken() { sessionStorage.removeItem(KEY); }

// A token in the address's fragment (#token=...) is taken once and removed from the address bar.
export function tokenFromFragment() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    setToken(decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
}

function headers() { const t = token(); return t ? { Authorization: `Bearer ${t}` } : {}; }

export async function get(path) {
  const r = await fetch(path, { headers: headers() });
  let body = null;
  try { body = await r.json(); } catch { body = { error: `${r.status} ${r.statusText}` }; }
  if (r.status === 401) throw new AuthError(body.error);
  if (!r.ok) throw new Error(body.error || `${r.status}`);
  return body;
}

// Server-sent events read through fetch (EventSource cannot send the Authorization header).
// onMessage gets each parsed message; reconnects after a pause when the stream ends.
export function follow(onMessage, onState) {
  let stopped = false;
  let controller = null;
  async function run() {
    while (!stopped) {
      controller = new AbortController();
      try {
        const r = await fetch("/api/v1/events", { headers: headers(), signal: controller.signal });
        if (!r.ok) throw new Error(`events: ${r.status}`);
        onState("live");
        const reader = r.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            for (const line of block.split("\n")) {
              if (line.startsWith("data: ")) onMessage(JSON.parse(line.slice(6)));
            }
          }
        }
      } catch (e) {
        if (stopped) return;
        onState("reconnecting");
      }
      await new Promise((ok) => setTimeout(ok, 2000));
    }
  }
  run();
  return () => { stopped = true; if (controller) controller.abort(); };
}
