/**
 * The node page itself: one HTML document with its CSS and script inline
 * (no CDN, no external charting: it works offline and behind the apiserver's
 * node proxy). The script fetches `ui/data` (relative to the page) every few
 * seconds and patches the DOM from it — each pod's element is kept by UID and
 * its contents replaced — so the page refreshes without reloading. Text is set
 * with `textContent`, never as HTML: pod names and probe output are data.
 *
 * @module
 */

/** How often the page asks for new data. */
export const REFRESH_MS = 3_000;

/** The page's style sheet. */
export const NODE_PAGE_STYLE = `
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--mute:#57606a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:13px/1.4 system-ui,sans-serif;margin:0;color:#1f2328;background:#fff}
header{display:flex;gap:12px;align-items:baseline;padding:10px 16px;border-bottom:1px solid var(--line);background:var(--bg)}
header h1{font-size:16px;margin:0}
main{padding:8px 16px}
h2{font-size:14px;margin:14px 0 6px}
.mute{color:var(--mute)}
.chip{display:inline-block;padding:0 6px;border-radius:10px;border:1px solid var(--line);margin:0 4px 2px 0;white-space:nowrap}
.ok{color:var(--ok);border-color:var(--ok)}
.bad{color:var(--bad);border-color:var(--bad)}
.warn{color:var(--warn);border-color:var(--warn)}
.grid{display:flex;flex-wrap:wrap;gap:6px 24px}
table{border-collapse:collapse;width:100%;margin:4px 0}
th,td{text-align:left;padding:3px 8px 3px 0;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--mute)}
.pod{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:8px 0}
.pod h3{font-size:14px;margin:0;display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.usage{margin-left:auto;display:inline-flex;gap:12px}
.spark{display:inline-flex;align-items:center;gap:4px;white-space:nowrap}
.spark svg{width:120px;height:24px;background:var(--bg);border-bottom:1px solid var(--line)}
.spark path{fill:none;stroke:#0969da;stroke-width:1.2}
.spark.mem path{stroke:#8250df}
code{font-size:12px}
`;

/** The page's script: fetch `ui/data`, patch the DOM, again every {@link REFRESH_MS}. */
export const NODE_PAGE_SCRIPT = `
"use strict";
const SVG = "http://www.w3.org/2000/svg";
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const k of kids.flat()) if (k !== undefined && k !== null && k !== "") el.append(k instanceof Node ? k : String(k));
  return el;
}
function cores(v) {
  if (v === undefined) return "–";
  return (v === 0 ? "0" : v < 0.1 ? (v * 1000).toFixed(1) + "m" : v.toFixed(2)) + " cores";
}
function bytes(v) {
  if (v === undefined) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return v.toFixed(i === 0 ? 0 : 1) + " " + u[i];
}
function spark(s, kind, w, hgt) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 " + w + " " + hgt);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.dataset.points = String(s ? s.points : 0);
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", s && s.d ? s.d : "M0 " + hgt);
  svg.append(path);
  const label = kind === "cpu" ? cores(s && s.last) : bytes(s && s.last);
  return h("span", { class: "spark " + (kind === "cpu" ? "cpu" : "mem"), title: kind + " over the last 2 minutes" }, svg, label);
}
const BAD = /BackOff|Err|Error|OOMKilled|Failed|Invalid|Unknown|ContainerCannotRun|Evicted/;
function stateClass(text) { return BAD.test(text) ? "bad" : /^(running|succeeded|completed)$/i.test(text) ? "ok" : "warn"; }
function resultClass(r) { return r === "success" ? "ok" : r === "failure" ? "bad" : "warn"; }
function resources(title, r) {
  return h("div", {}, h("b", {}, title + ": "), Object.entries(r).map(([k, v]) => h("span", { class: "chip" }, k + " " + v)));
}
function renderNode(n, spk) {
  const el = document.getElementById("node");
  el.dataset.source = n.source;
  el.replaceChildren(
    h("div", { class: "grid" },
      h("div", {}, h("b", {}, n.name), " ", h("span", { class: "mute" }, n.source === "apiserver" ? "(registered Node)" : "(computed by the agent: no Node object)")),
      spark(n.cpu, "cpu", spk.width, spk.height), spark(n.memory, "mem", spk.width, spk.height)),
    h("div", { id: "conditions" }, n.conditions.map((c) =>
      h("span", { class: "chip " + (c.ok ? "ok" : "bad"), "data-type": c.type, title: c.reason + ": " + c.message + (c.since ? " (since " + c.since + ")" : "") }, c.type + " " + c.status))),
    n.pressure.length ? h("div", { class: "bad", id: "pressure" }, "Under pressure: " + n.pressure.join(", ")) : "",
    resources("capacity", n.capacity), resources("allocatable", n.allocatable),
    h("div", { class: "mute" }, Object.entries(n.info).map(([k, v]) => k + " " + v).join(" · ")));
}
function probe(p) {
  return h("div", { class: "probe", "data-type": p.type, "data-result": p.result },
    h("span", { class: "chip " + resultClass(p.result), title: p.output }, p.type + " " + p.result), " ",
    h("code", {}, p.handler), h("span", { class: "mute" }, " every " + p.periodSeconds + "s"),
    p.output ? h("div", { class: "mute" }, p.output) : "");
}
function container(c, spk) {
  const state = c.state + (c.reason ? ": " + c.reason : "") + (c.exitCode !== undefined ? " (exit " + c.exitCode + ")" : "");
  return h("tr", { class: "container", "data-name": c.name, "data-state": c.state, "data-reason": c.reason },
    h("td", {}, h("b", {}, c.name), c.kind === "app" ? "" : h("span", { class: "mute" }, " " + c.kind), h("div", { class: "mute" }, c.image)),
    h("td", {}, h("span", { class: "chip state " + stateClass(c.reason || c.state) }, state), c.message ? h("div", { class: "mute message" }, c.message) : ""),
    h("td", {}, c.ready ? "ready" : "not ready"),
    h("td", { class: "restarts" }, String(c.restarts), c.lastTermination ? h("div", { class: "mute" }, "last: " + c.lastTermination) : ""),
    h("td", {}, c.probes.length ? c.probes.map(probe) : h("span", { class: "mute" }, "none")),
    h("td", {}, c.cpu ? spark(c.cpu, "cpu", spk.width, spk.height) : "", c.memory ? h("div", {}, spark(c.memory, "mem", spk.width, spk.height)) : ""));
}
function renderPod(el, p, spk) {
  el.dataset.status = p.status;
  el.replaceChildren(
    h("h3", {},
      h("span", { class: "name" }, p.namespace + "/" + p.name),
      h("span", { class: "chip status " + stateClass(p.status) }, p.status),
      h("span", {}, "ready " + p.ready), h("span", {}, "restarts " + p.restarts),
      h("span", { class: "mute" }, [p.qosClass, p.podIP].filter(Boolean).join(" · ")),
      h("a", { href: p.trace, class: "trace" }, "sync trace"),
      h("span", { class: "usage" }, spark(p.cpu, "cpu", spk.width, spk.height), " ", spark(p.memory, "mem", spk.width, spk.height))),
    p.message ? h("div", { class: "mute" }, p.message) : "",
    h("table", {},
      h("thead", {}, h("tr", {}, ["container", "state", "ready", "restarts", "probes", "usage"].map((t) => h("th", {}, t)))),
      h("tbody", {}, p.containers.map((c) => container(c, spk)))));
}
function render(d) {
  renderNode(d.node, d.spark);
  const list = document.getElementById("pods");
  const seen = new Set();
  for (const p of d.pods) {
    seen.add(p.uid);
    let el = document.getElementById("pod-" + p.uid);
    if (!el) { el = h("section", { class: "pod", id: "pod-" + p.uid }); }
    list.append(el); // in the data's order
    renderPod(el, p, d.spark);
  }
  for (const el of [...list.children]) if (!seen.has(el.id.slice(4))) el.remove();
  document.getElementById("podcount").textContent = String(d.pods.length);
  document.getElementById("updated").textContent = "updated " + new Date(d.generatedAt).toLocaleTimeString();
  document.body.dataset.generated = d.generatedAt;
  document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
  document.body.dataset.state = "ready";
}
async function refresh() {
  try {
    const resp = await fetch("ui/data", { cache: "no-store" });
    if (!resp.ok) throw new Error("ui/data answered " + resp.status);
    render(await resp.json());
    document.getElementById("error").textContent = "";
  } catch (err) {
    document.getElementById("error").textContent = String(err && err.message || err);
  }
}
refresh();
setInterval(refresh, ${REFRESH_MS});
`;

/**
 * The page, with its style and script inline.
 * @param nodeName shown in the title until the first data arrives
 * @returns the HTML document
 */
export function nodePageHtml(nodeName: string): string {
  const title = nodeName.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · denolet</title>
<style>${NODE_PAGE_STYLE}</style>
</head><body data-state="loading">
<header><h1>denolet · ${title}</h1><span id="updated" class="mute">loading…</span><span id="error" class="bad"></span></header>
<main>
<h2>Node</h2><div id="node"></div>
<h2>Pods (<span id="podcount">0</span>)</h2><div id="pods"></div>
</main>
<script>${NODE_PAGE_SCRIPT}</script>
</body></html>
`;
}
