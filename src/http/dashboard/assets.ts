import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/** The dashboard's only stylesheet and script, served by the service itself (no CDN, no fonts). */
export const stylesheet = `
:root { --bg:#f6f7f9; --panel:#fff; --text:#1d2330; --muted:#667085; --line:#e4e7ec; --accent:#3557d4; --accent-ink:#fff;
  --ok:#157f3b; --warn:#b54708; --bad:#b42318; --radius:8px; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--text); font-size:15px; line-height:1.5; }
a { color:var(--accent); }
:focus-visible { outline:3px solid #9db2f5; outline-offset:2px; }
.shell { display:grid; grid-template-columns: 220px 1fr; min-height:100vh; }
.sidebar { background:#111827; color:#e5e7eb; padding:20px 16px; display:flex; flex-direction:column; gap:16px; }
.brand { color:#fff; font-weight:700; font-size:18px; text-decoration:none; letter-spacing:.02em; }
.sidebar nav { display:flex; flex-direction:column; gap:2px; }
.sidebar nav a { color:#cbd5e1; text-decoration:none; padding:8px 10px; border-radius:6px; }
.sidebar nav a:hover { background:#1f2937; color:#fff; }
.sidebar nav a[aria-current="page"] { background:#374151; color:#fff; font-weight:600; }
.signout { margin-top:auto; display:flex; flex-direction:column; gap:4px; font-size:13px; }
main { padding:28px 32px; max-width:1200px; width:100%; min-width:0; }
h1 { margin:0 0 20px; font-size:24px; overflow-wrap:anywhere; }
h2 { font-size:17px; margin:28px 0 12px; }
.panel { background:var(--panel); border:1px solid var(--line); border-radius:var(--radius); padding:20px; margin-bottom:20px; }
table { width:100%; border-collapse:collapse; background:var(--panel); border:1px solid var(--line); border-radius:var(--radius); overflow:clip; }
th, td { text-align:left; padding:9px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
td { font-size:14px; }
th { font-size:12px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); background:#fafbfc; }
tr:last-child td { border-bottom:none; }
.table-wrap { overflow-x:auto; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size:13px; }
.muted { color:var(--muted); }
.badge { display:inline-block; padding:1px 8px; border-radius:999px; font-size:12px; font-weight:600; }
.badge-active, .badge-created { background:#dcfce7; color:var(--ok); }
.badge-suspended, .badge-beta, .badge-alpha { background:#fef0c7; color:var(--warn); }
.badge-revoked, .badge-expired, .badge-yanked { background:#fee4e2; color:var(--bad); }
.badge-stable { background:#e0e7ff; color:#3730a3; }
.badge-disabled { background:#f2f4f7; color:var(--muted); }
form.stack { display:grid; gap:14px; max-width:560px; }
.grid-2 { display:grid; grid-template-columns: 1fr 1fr; gap:14px; }
label { display:grid; gap:4px; font-weight:600; font-size:14px; }
label .hint { font-weight:400; color:var(--muted); font-size:13px; }
input, select, textarea { max-width:100%; font:inherit; font-weight:400; padding:8px 10px; border:1px solid #cfd4dc; border-radius:6px; background:#fff; color:var(--text); }
input[aria-invalid="true"], select[aria-invalid="true"] { border-color:var(--bad); }
.field-error { color:var(--bad); margin:0; font-size:13px; font-weight:500; }
button, .button { font:inherit; cursor:pointer; border:1px solid var(--accent); background:var(--accent); color:var(--accent-ink);
  padding:8px 14px; border-radius:6px; text-decoration:none; display:inline-block; }
button.secondary { background:#fff; color:var(--text); border-color:#cfd4dc; }
button.danger { background:#fff; color:var(--bad); border-color:#f1b5b0; }
button.small { padding:2px 8px; font-size:12px; margin-top:4px; }
button.link { background:none; border:none; color:#cbd5e1; padding:0; text-align:left; text-decoration:underline; }
.actions { display:flex; gap:8px; flex-wrap:wrap; align-items:center; }
.inline { display:inline; }
.spaced { margin-top:16px; }
.toolbar { display:flex; gap:10px; flex-wrap:wrap; align-items:end; margin-bottom:16px; }
.flash { background:#ecfdf3; border:1px solid #abefc6; color:var(--ok); padding:10px 14px; border-radius:6px; }
.alert { background:#fef3f2; border:1px solid #fecdca; color:var(--bad); padding:10px 14px; border-radius:6px; }
.secret { display:flex; gap:8px; align-items:center; background:#111827; color:#f9fafb; padding:12px; border-radius:6px; word-break:break-all; }
.secret > code, .secret > pre { flex:1; min-width:0; margin:0; }
.secret > pre { white-space:pre-wrap; }
.secret > button { flex-shrink:0; }
h2 .mono { overflow-wrap:anywhere; }
.empty { text-align:center; padding:36px; color:var(--muted); background:var(--panel); border:1px dashed var(--line); border-radius:var(--radius); }
dl.facts { display:grid; grid-template-columns: max-content 1fr; gap:6px 18px; margin:0; }
dl.facts dt { color:var(--muted); }
dl.facts dd { margin:0; }
.matrix td.yes { color:var(--ok); font-weight:600; }
.matrix td.no { color:#98a2b3; }
fieldset { border:1px solid var(--line); border-radius:6px; padding:10px 14px; display:grid; gap:6px; }
legend { font-weight:600; font-size:14px; padding:0 4px; }
label.check { display:flex; gap:8px; align-items:center; font-weight:400; }
.notes { background:#fafbfc; border:1px solid var(--line); border-radius:6px; padding:4px 14px; margin:12px 0; font-size:14px; overflow-wrap:anywhere; }
.notes h1, .notes h2, .notes h3, .notes h4 { font-size:15px; margin:12px 0 6px; }
.notes p, .notes ul, .notes ol, .notes pre, .notes blockquote, .notes table { margin:8px 0; }
.notes pre { background:#f2f4f7; padding:8px; border-radius:4px; overflow-x:auto; }
.notes blockquote { border-left:3px solid var(--line); padding-left:10px; color:var(--muted); }
.notes table { width:auto; }
.align-center { text-align:center; } .align-right { text-align:right; } .align-left { text-align:left; }
.feeds summary { cursor:pointer; }
.feeds summary h2 { display:inline; margin:0; }
.feed-urls code.url { display:block; overflow-wrap:anywhere; }
.client-config h3 { font-size:15px; margin:18px 0 0; }
pre.snippet { background:#111827; color:#f9fafb; padding:12px; border-radius:6px; overflow-x:auto; font-size:13px; margin:8px 0 4px; }
p.hint { color:var(--muted); font-size:13px; margin:0 0 8px; }
.release h2 { margin:0; }
time, time > span { white-space:nowrap; }
td time { white-space:normal; }
dd.note { white-space:pre-wrap; overflow-wrap:anywhere; }
.overview-grid { display:grid; grid-template-columns:repeat(auto-fit, minmax(min(100%, 420px), 1fr)); gap:0 20px; }
.overview-grid h2 { margin-top:0; }
ul.attention { margin:0; padding-left:1.2em; display:grid; gap:6px; }
ul.attention a.url { overflow-wrap:anywhere; }
ul.totals { display:flex; gap:16px; flex-wrap:wrap; padding:0; margin:8px 0 0; list-style:none; color:var(--muted); }
.pager { display:flex; gap:14px; align-items:center; flex-wrap:wrap; margin:14px 0; }
.tabs { display:flex; gap:4px; border-bottom:1px solid var(--line); margin:0 0 14px; }
.tabs a { padding:8px 14px; text-decoration:none; border-bottom:2px solid transparent; }
.tabs a[aria-current="page"] { border-bottom-color:currentColor; font-weight:600; }
ul.diff { margin:0; padding-left:1.2em; overflow-wrap:anywhere; }
ul.diff del { color:var(--muted); }
ul.diff ins { text-decoration:none; }
.list-summary { justify-content:space-between; margin-bottom:8px; }
.list-summary p { margin:0; }
th a { color:inherit; text-decoration:none; }
th[aria-sort="ascending"], th[aria-sort="descending"] { color:var(--text); }
td.details { white-space:pre-wrap; overflow-wrap:anywhere; width:40%; min-width:30ch; }
td.target { overflow-wrap:anywhere; min-width:12ch; }
table.licenses td:first-child > a { white-space:nowrap; font-size:12.5px; }
@media (min-width: 761px) {
  /* A row's buttons stay in view when a table is wider than its box (a long name or e-mail). */
  .table-wrap td:last-child:has(button), .table-wrap th:last-child:empty {
    position:sticky; right:0; background:var(--panel); box-shadow:-6px 0 6px -6px rgba(16,24,40,.25); }
  .table-wrap th:last-child:empty { background:#fafbfc; }
}
.login { min-height:100vh; display:grid; place-items:center; }
.login .panel { width:min(400px, 92vw); }
@media (max-width: 760px) {
  .shell { grid-template-columns: minmax(0, 1fr); }
  .sidebar { flex-direction:row; flex-wrap:wrap; align-items:center; padding:12px; gap:8px 16px; }
  .sidebar nav { flex-direction:row; flex-wrap:nowrap; overflow-x:auto; max-width:100%; order:3; flex-basis:100%; }
  .sidebar nav a { white-space:nowrap; }
  .signout { margin-top:0; flex-direction:row; flex-wrap:wrap; gap:4px 10px; min-width:0; overflow-wrap:anywhere; }
  main { padding:18px 12px; }
  .grid-2 { grid-template-columns: minmax(0, 1fr); }
  main table { display:block; overflow-x:auto; max-width:100%; }
  .panel { padding:14px; }
  .toolbar > label, .toolbar input, .toolbar select { min-width:0; max-width:100%; }
  .empty { padding:20px 12px; }
  p code, li code, dd code, dd.mono { overflow-wrap:anywhere; }
}
`;

/** The dashboard's icon: a key on the accent colour. */
export const favicon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#3557d4"/>
<circle cx="12" cy="16" r="5" fill="none" stroke="#fff" stroke-width="3"/>
<path d="M17 16h10M23 16v5M27 16v4" stroke="#fff" stroke-width="3" fill="none"/>
</svg>
`;

export const script = `
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute("data-copy") || "");
  if (!source) return;
  try {
    await navigator.clipboard.writeText(source.textContent || "");
    button.textContent = "Copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    button.textContent = "Press Ctrl+C";
  }
});
`;

/** A file of the uPlot package (MIT), served as our own asset: charts load nothing from elsewhere. */
function uplotFile(name: string): string {
  return readFileSync(createRequire(import.meta.url).resolve(`uplot/dist/${name}`), "utf8");
}

/**
 * uPlot, then what draws each chart: a <figure class="chart"> holding its data as JSON
 * ({labels, series: [{label, values, color}]}, days as YYYY-MM-DD) in a
 * <script type="application/json">, drawn as lines across the figure's width.
 */
export function chartScript(): string {
  return `${uplotFile("uPlot.iife.min.js")}
document.querySelectorAll("figure.chart").forEach((figure) => {
  const source = figure.querySelector('script[type="application/json"]');
  if (!source) return;
  const data = JSON.parse(source.textContent || "{}");
  const times = data.labels.map((day) => Date.parse(day + "T00:00:00Z") / 1000);
  const width = Math.max(260, figure.clientWidth);
  new uPlot({
    width, height: 220, tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    scales: { y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    series: [{}].concat(data.series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: false } }))),
    axes: [{}, { size: 40 }],
  }, [times].concat(data.series.map((s) => s.values)), figure.querySelector(".plot"));
});
`;
}

export function chartStylesheet(): string {
  return `${uplotFile("uPlot.min.css")}
figure.chart { margin:0; min-width:0; overflow:hidden; }
figure.chart figcaption { font-weight:600; margin-bottom:6px; }
`;
}
