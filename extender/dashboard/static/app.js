// The dashboard: one view at a time (#/queues, #/units, #/clusters, #/story), refreshed by polling
// the extender's JSON under api/ every few seconds. Read-only.
import { h } from "./dom.js";
import { lineChart } from "./chart.js";

const POLL_MS = 3000;
const view = document.getElementById("view");
const status = document.getElementById("status");

function route() {
  const [path, query] = (location.hash.replace(/^#\/?/, "") || "queues").split("?");
  return { name: path || "queues", params: new URLSearchParams(query || "") };
}

function go(name, params) {
  const q = new URLSearchParams([...params].filter(([, v]) => v)).toString();
  location.hash = `#/${name}${q ? "?" + q : ""}`;
}

async function api(path, params) {
  const r = await fetch(`api/${path}${params && [...params].length ? "?" + params : ""}`, {
    credentials: "same-origin", headers: { Accept: "application/json" },
  });
  if (!r.ok) throw new Error(`${r.status} ${(await r.text()).trim()}`);
  return r.json();
}

const seconds = (iso) => Date.parse(iso) / 1000;

function age(created, now) {
  if (!created) return "-";
  const d = Math.max(0, seconds(now) - seconds(created));
  if (d < 120) return `${Math.round(d)}s`;
  if (d < 7200) return `${Math.round(d / 60)}m`;
  if (d < 172800) return `${Math.round(d / 3600)}h`;
  return `${Math.round(d / 86400)}d`;
}

const storyLink = (ns, kind, name) =>
  h("a", { href: `#/story?namespace=${encodeURIComponent(ns)}&${kind}=${encodeURIComponent(name)}` }, name);

// ------------------------------------------------------------------ queues
function queues(data) {
  // The last hour, or since the first sample this replica took when that is more recent.
  const t1 = seconds(data.now);
  const first = Math.min(t1, ...data.queues.filter((q) => q.history.length).map((q) => q.history[0][0]));
  const t0 = Math.max(t1 - data.window, Math.min(first, t1 - 120));
  const cards = data.queues.map((q) => {
    const pts = (i) => q.history.map((sample) => [sample[0], sample[i]]);
    const chart = lineChart([
      { name: "fair share", cls: "fair", points: pts(1) },
      { name: "adjusted fair share", cls: "adjusted", points: pts(2) },
      { name: "actual share", cls: "actual", points: pts(3) },
    ], t0, t1);
    return h("section", { class: "card queue", "data-queue": q.name },
      h("h2", {}, q.name, h("span", { class: "muted" }, `priority factor ${q.priority_factor}${q.cordoned ? ", cordoned" : ""}`)),
      h("div", { class: "counts" },
        h("span", {}, "fair ", h("b", { class: "fair" }, q.fair_share.toFixed(3))),
        h("span", {}, "adjusted ", h("b", { class: "adjusted" }, q.adjusted_fair_share.toFixed(3))),
        h("span", {}, "actual ", h("b", { class: "actual" }, q.actual_share.toFixed(3)))),
      chart,
      h("div", { class: "counts" },
        h("span", {}, h("a", { href: `#/units?queue=${encodeURIComponent(q.name)}&state=Waiting` }, "queued "), h("b", { class: "queued" }, q.queued)),
        h("span", {}, h("a", { href: `#/units?queue=${encodeURIComponent(q.name)}` }, "running "), h("b", { class: "running" }, q.running)),
        h("span", { class: "muted" }, Object.entries(q.allocated).map(([k, v]) => `${k}=${v}`).join(", "))));
  });
  return [
    h("p", { class: "legend" }, h("span", { class: "fair" }, "fair share"), h("span", { class: "adjusted" }, "adjusted fair share"),
      h("span", { class: "actual" }, "actual share"), h("span", { class: "muted" }, `up to the last ${Math.round(data.window / 60)} minutes, one sample every ${data.interval}s`)),
    data.queues.length ? h("div", { class: "grid" }, cards) : h("p", { class: "muted" }, "no queues"),
  ];
}

// ------------------------------------------------------------------ gangs and pods
function select(name, options, value, params) {
  return h("label", {}, `${name} `,
    h("select", {
      name, onchange: (e) => { params.set(name, e.target.value); go("units", params); },
    }, h("option", { value: "" }, "all"), options.map((o) => h("option", { value: o, selected: o === value }, o))));
}

function units(data, params) {
  const rows = data.units.map((u) =>
    h("tr", { class: "unit", "data-namespace": u.namespace, "data-name": u.name, "data-state": u.state, "data-queue": u.queue },
      h("td", {}, u.namespace),
      h("td", {}, storyLink(u.namespace, u.kind, u.name)),
      h("td", {}, u.kind),
      h("td", {}, u.queue),
      h("td", {}, `${u.present}/${u.size}${u.reservation ? " +reservation" : ""}`),
      h("td", {}, u.clusters.join(", ") || "-"),
      h("td", { class: `state-${u.state}` }, u.state),
      h("td", {}, age(u.created, data.now)),
      h("td", { class: "reason" }, u.reason || "")));
  return [
    h("div", { class: "filters" },
      select("queue", data.queues, params.get("queue"), params),
      select("namespace", data.namespaces, params.get("namespace"), params),
      select("state", data.states, params.get("state"), params),
      h("span", { class: "muted" }, `${data.units.length} of ${data.total}`,
        data.leader ? "" : " (a standby replica answered: reasons are known by the leader)")),
    h("table", { id: "units" },
      h("thead", {}, h("tr", {}, ["namespace", "gang or pod", "kind", "queue", "present", "cluster", "state", "age", "why it waits"].map((c) => h("th", {}, c)))),
      h("tbody", {}, rows)),
  ];
}

// ------------------------------------------------------------------ clusters
function milli(q) {
  if (q === undefined) return 0;
  const m = /^([0-9.]+)(m?)$/.exec(String(q));
  return m ? parseFloat(m[1]) * (m[2] ? 1 : 1000) : 0;
}

const PALETTE = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#db2777", "#0891b2", "#ca8a04", "#4b5563"];

function clusters(data) {
  return h("div", { class: "grid" }, data.clusters.map((c) => {
    const total = milli(c.allocatable.cpu);
    const queues = Object.entries(c.allocated_by_queue);
    return h("section", { class: "card cluster", "data-cluster": c.name, "data-ready": c.ready },
      h("h2", {}, c.name, h("span", { class: `ready-${c.ready}` }, c.ready === "True" ? "Ready" : "NotReady")),
      h("dl", {},
        h("dt", {}, "reason"), h("dd", {}, c.reason || "-", c.message ? h("span", { class: "muted" }, ` ${c.message}`) : ""),
        h("dt", {}, "last heartbeat"), h("dd", {}, c.last_heartbeat ? `${age(c.last_heartbeat, data.now)} ago (${c.last_heartbeat})` : "never"),
        h("dt", {}, "nodes"), h("dd", {}, c.nodes, c.cordoned ? " (cordoned)" : ""),
        h("dt", {}, "capacity"), h("dd", {}, Object.entries(c.allocatable).map(([k, v]) => `${k}=${v}`).join(", ") || "-"),
        h("dt", {}, "pods"), h("dd", {}, c.pods)),
      h("div", { class: "bar", title: "CPU allocated by queue" },
        queues.map(([q, r], i) => h("span", { title: `${q}: cpu ${r.cpu || 0}`, style: `width:${total ? (100 * milli(r.cpu)) / total : 0}%;background:${PALETTE[i % PALETTE.length]}` }))),
      queues.length
        ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "queue"), h("th", {}, "allocated"))),
          h("tbody", {}, queues.map(([q, r], i) => h("tr", {},
            h("td", {}, h("span", { style: `color:${PALETTE[i % PALETTE.length]}` }, "\u25A0 "), q),
            h("td", {}, Object.entries(r).map(([k, v]) => `${k}=${v}`).join(", "))))))
        : h("p", { class: "muted" }, "nothing allocated"));
  }));
}

// ------------------------------------------------------------------ one pod or gang
function story(data) {
  const title = data.gang ? `gang ${data.namespace}/${data.gang}` : `pod ${data.namespace}/${data.pod}`;
  const members = data.members.map((m) => {
    const p = m.pod;
    return h("section", { class: "card member", "data-pod": p.name },
      h("h2", {}, p.name, h("span", { class: "muted" }, p.phase)),
      h("dl", {},
        h("dt", {}, "queue"), h("dd", {}, p.queue ?? "not managed by armada-bridge (no queue)"),
        h("dt", {}, "gang"), h("dd", {}, p.error ? `cannot be read: ${p.error}` : p.gang
          ? `${p.gang.key} (${p.gang.protocol}), ${p.gang.size} members${p.gang.reservation ? ", with a capacity reservation" : ""}` : "-"),
        h("dt", {}, "decision"), h("dd", {}, p.cluster
          ? `admitted to remote cluster ${p.cluster}, node ${p.node || "?"}; bound to ${p.boundTo || "(not yet)"}` : "not admitted"),
        m.reason && !p.cluster ? [h("dt", {}, "core says"), h("dd", { class: "reason now" }, m.reason)] : [],
        m.waiting ? [h("dt", {}, "waiting"), h("dd", { class: "reason waiting" }, m.waiting)] : [],
        m.scheduler.map((text) => [h("dt", {}, "scheduler"), h("dd", {}, text)])));
  });
  return [
    h("h2", {}, title),
    h("div", { class: "grid" }, members),
    h("h3", {}, "Events, oldest first"),
    data.events.length
      ? h("table", { id: "events" },
        h("thead", {}, h("tr", {}, ["time", "pod", "type", "reason", "message"].map((c) => h("th", {}, c)))),
        h("tbody", {}, data.events.map((e) => h("tr", {},
          h("td", {}, e.time), h("td", {}, e.pod), h("td", {}, e.type), h("td", {}, e.reason), h("td", {}, e.message)))))
      : h("p", { class: "muted" }, "no Events"),
  ];
}

// ------------------------------------------------------------------ loop
const VIEWS = {
  queues: (p) => api("queues").then((d) => queues(d, p)),
  units: (p) => api("units", p).then((d) => units(d, p)),
  clusters: (p) => api("clusters").then((d) => clusters(d, p)),
  story: (p) => api("story", p).then((d) => story(d, p)),
};

let timer = null;
let shown = "";

async function refresh() {
  clearTimeout(timer);
  const { name, params } = route();
  const here = location.hash;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.view === name);
  try {
    const content = await (VIEWS[name] || VIEWS.queues)(params);
    // Not while a filter is open, nor when the user went elsewhere meanwhile.
    if (location.hash === here && !(document.activeElement && document.activeElement.tagName === "SELECT" && shown === here)) {
      view.replaceChildren(...[content].flat());
      view.dataset.view = name;
      shown = here;
    }
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
    status.classList.remove("error");
  } catch (e) {
    status.textContent = `not updated: ${e.message}`;
    status.classList.add("error");
  }
  timer = setTimeout(refresh, POLL_MS);
}

window.addEventListener("hashchange", refresh);
refresh();
