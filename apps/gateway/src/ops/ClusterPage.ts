/**
 * The operators' page of the cluster (`GET /ops/cluster`): a static page that holds no data. It
 * asks for the operator token (kept in the tab's sessionStorage only), then reads
 * `GET /ops/v1/cluster` with it every 5 seconds and shows runners, shards, entities, numbers by
 * status, the webhook backlog and the oldest unprocessed cluster message.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"

export const PAGE_PATH = "/ops/cluster"

const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>wagate cluster</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}th{background:#f3f3f3}
.bad{color:#b00020;font-weight:600}.ok{color:#137333}#error{color:#b00020}
</style></head><body>
<h1>wagate cluster</h1>
<form id="login"><label>Operator token <input id="token" type="password" size="40" autocomplete="off"></label>
<button>Show</button></form>
<p id="error"></p><div id="view"></div>
<script>
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"})[c]);
const table = (head, rows) => "<table><tr>" + head.map((h) => "<th>" + esc(h) + "</th>").join("") + "</tr>" +
  rows.map((r) => "<tr>" + r.map((c) => "<td>" + c + "</td>").join("") + "</tr>").join("") + "</table>";
const secs = (s) => s === null ? "none" : s.toFixed(1) + " s";
async function refresh() {
  const token = sessionStorage.getItem("wagate-operator-token");
  if (!token) return;
  try {
    const r = await fetch("/ops/v1/cluster", { headers: { authorization: "Bearer " + token } });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.status);
    document.getElementById("error").textContent = "";
    document.getElementById("login").hidden = true;
    document.getElementById("view").innerHTML =
      "<p>" + esc(body.time) + " · " + body.shards_per_group + " shards, " +
      (body.unassigned_shards ? '<span class="bad">' + body.unassigned_shards + " unassigned</span>" : '<span class="ok">all assigned</span>') + "</p>" +
      "<h2>Runners</h2>" + table(["address", "healthy", "last heartbeat", "shards", "entities", "waking", "reported"],
        body.runners.map((x) => [esc(x.address), x.healthy ? '<span class="ok">yes</span>' : '<span class="bad">no</span>',
          esc(x.last_heartbeat),
          x.waiting_for_runners === null ? x.shards : x.shards + " (waiting for " + x.waiting_for_runners + " runners)",
          x.entities ?? "", x.waking ? '<span class="bad">' + x.waking + "</span>" : x.waking ?? "", esc(x.reported_at)])) +
      "<h2>Numbers by status</h2>" + table(["status", "numbers"], Object.entries(body.numbers.by_status).map(([k, v]) => [esc(k), v])) +
      (body.numbers.not_running.length ? '<h3 class="bad">Not running: waiting for a runner, or not yet woken</h3>' +
        table(["id", "phone", "shard", "held by", "last stored status"], body.numbers.not_running.map((n) =>
          [n.id, esc(n.phone), n.shard, n.runner === null ? "no healthy runner" : esc(n.runner) + " (waking)", esc(n.status)])) : "") +
      (body.numbers.not_working.length ? "<h3>Not WORKING</h3>" + table(["id", "phone", "status", "reason", "linked"],
        body.numbers.not_working.map((n) => [n.id, esc(n.phone), esc(n.status), esc(n.reason),
          n.linked ? "yes" : '<span class="bad">no: link it again</span>'])) : "") +
      "<h2>Backlogs</h2>" + table(["queue", "waiting", "oldest"], [
        ["webhook events", body.webhooks.backlog, secs(body.webhooks.lag_seconds)],
        ["cluster messages", body.cluster_messages.unprocessed, secs(body.cluster_messages.oldest_age_seconds)]]) +
      (body.webhooks.held_accounts ? "<p>" + body.webhooks.held_accounts +
        " accounts hold webhook events behind a turned-off endpoint (not counted above).</p>" : "");
  } catch (e) {
    document.getElementById("error").textContent = "Could not read the cluster: " + e.message;
    document.getElementById("login").hidden = false;
  }
}
document.getElementById("login").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("wagate-operator-token", document.getElementById("token").value);
  refresh();
});
refresh();
setInterval(refresh, 5000);
</script></body></html>`

/** Serves the page beside the API; it is public because it contains nothing but this code. */
export const ClusterPage = HttpApiBuilder.Router.use((router) =>
  router.get(
    PAGE_PATH,
    Effect.succeed(
      HttpServerResponse.text(html, { contentType: "text/html; charset=utf-8" }).pipe(
        HttpServerResponse.setHeader("cache-control", "no-store"),
        HttpServerResponse.setHeader("content-security-policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
      )
    )
  )
)
