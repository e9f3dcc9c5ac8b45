/**
 * The console's one stylesheet, served by the console itself at /admin/console.css (no CDN, no
 * inline style: the Content-Security-Policy allows styles from 'self' only).
 */
export const CONSOLE_CSS = `
:root { --fg: #1d2330; --muted: #5b6475; --line: #d6dbe4; --bg: #f6f7f9; --accent: #1f5fbf; --bad: #b3261e; --ok: #1e7a3c; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.2rem; background: #fff; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 600; }
header nav a { margin-right: 1rem; color: var(--accent); text-decoration: none; }
header nav a.here { font-weight: 600; text-decoration: underline; }
header .who { margin-left: auto; color: var(--muted); display: flex; gap: .6rem; align-items: center; }
main { padding: 1.2rem; max-width: 1200px; }
h1 { font-size: 1.35rem; margin: 0 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .6rem; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: .35rem .55rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f5; font-weight: 600; font-size: .9rem; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .85rem; }
pre { background: #fff; border: 1px solid var(--line); padding: .7rem; overflow-x: auto; white-space: pre; }
form.inline { display: inline; }
form.card, .card { background: #fff; border: 1px solid var(--line); padding: 1rem; margin-bottom: 1rem; }
label { display: block; margin: .45rem 0 .15rem; font-weight: 500; }
label.check { display: inline-flex; gap: .35rem; align-items: center; font-weight: 400; }
input[type=text], input[type=password], input[type=number], input[type=datetime-local], input[type=search], select, textarea {
  width: 100%; max-width: 32rem; padding: .35rem .45rem; border: 1px solid #b8c0cc; border-radius: 3px; font: inherit; background: #fff; }
textarea { min-height: 6rem; }
.row { display: flex; flex-wrap: wrap; gap: 1rem; }
.row > div { flex: 1 1 14rem; }
button { font: inherit; padding: .35rem .8rem; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 3px; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
.flash { padding: .55rem .8rem; margin-bottom: 1rem; border: 1px solid; border-radius: 3px; background: #fff; }
.flash.ok { border-color: var(--ok); color: var(--ok); }
.flash.error { border-color: var(--bad); color: var(--bad); }
.muted { color: var(--muted); }
.tag { display: inline-block; padding: 0 .4rem; border-radius: 3px; background: #eef1f5; font-size: .8rem; }
.tag.live { background: #dff3e6; color: var(--ok); }
.tag.scheduled { background: #fff3d6; color: #7a5400; }
.tag.expired, .tag.off { background: #f6dedc; color: var(--bad); }
.login { max-width: 24rem; margin: 4rem auto; }
.note { border-left: 3px solid var(--line); padding-left: .7rem; color: var(--muted); }
`;
