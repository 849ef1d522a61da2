"""The report page's inline stylesheet and script (no external resources)."""

CSS = r"""
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{padding:16px 24px;background:#fff;border-bottom:1px solid #ddd}
h1{font-size:20px;margin:0 0 4px} h2{font-size:17px;margin:0 0 10px}
main{padding:8px 24px 40px}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:14px 16px;margin:14px 0;overflow-x:auto}
nav a{margin-right:10px}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
thead th{background:#f2f2f2;text-align:center} tbody th{text-align:left;font-weight:600}
.notes{color:#555;font-size:12.5px} ul.notes{padding-left:18px}
svg.chart{display:block;margin:8px 0} svg .title{font-weight:600;font-size:13px}
svg .tick{font-size:11px;fill:#333} svg .grid{stroke:#e5e5e5} svg .whisker{stroke:#111;stroke-width:1.3}
.filters label{margin-right:12px;font-size:13px} .filters select{margin-left:4px}
.browser{display:flex;gap:14px;align-items:flex-start}
#episode-list{list-style:none;margin:0;padding:0;width:340px;max-height:560px;overflow-y:auto;border:1px solid #ddd;flex:none}
#episode-list li{padding:4px 8px;border-bottom:1px solid #eee;cursor:pointer;font-size:12.5px}
#episode-list li:hover,#episode-list li.sel{background:#eef3ff}
.ok{color:#137333;font-weight:600} .fail{color:#b3261e;font-weight:600}
.detail{flex:1;min-width:0} .detail pre{white-space:pre-wrap;background:#f6f6f6;padding:6px;border-radius:4px;max-height:320px;overflow:auto;font-size:12px}
.hist td,.hist th{text-align:left;white-space:normal;font-size:12.5px} .hist tr.bad td{color:#b3261e}
.pair{display:flex;gap:12px;border-top:1px solid #ddd;padding-top:8px;margin-top:8px} .pair>div{flex:1;min-width:0}
.tag{display:inline-block;padding:0 6px;border-radius:8px;background:#eee;font-size:11.5px;margin-left:4px}
.pager{margin:6px 0;font-size:13px} .pager button{margin-right:6px}
.call{border:1px solid #e3e3e3;border-radius:6px;margin:6px 0;padding:4px 8px} .call>summary{cursor:pointer;font-size:13px}
.call-body{display:flex;gap:12px;align-items:flex-start;margin-top:6px}
.frames{flex:none;width:260px} .frames figure{margin:0 0 6px} .frames img{width:256px;height:auto;border:1px solid #ccc;display:block}
.frames figcaption{font-size:11px;color:#555}
.chat{flex:1;min-width:0} .turn{border-radius:8px;padding:6px 10px;margin:0 0 6px;max-height:340px;overflow:auto}
.turn .role{font-size:11px;font-weight:700;text-transform:uppercase;letter-spacing:.04em;color:#555;display:block;margin-bottom:2px}
.turn .text{white-space:pre-wrap;font-size:12.5px;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.turn.system{background:#f4f4f6} .turn.user{background:#eef3ff} .turn.assistant{background:#effaf1}
.turn.answer{background:#fff7e6;border:1px solid #f0d9a8}
.placeholder{display:inline-block;padding:2px 6px;border:1px dashed #aaa;border-radius:4px;font-size:11.5px;color:#555}
.cost{font-size:11.5px;color:#555} .dirty{color:#b3261e;font-weight:600}
.run{border-top:1px solid #eee;padding-top:6px} .run h3{font-size:14px;margin:6px 0}
"""

SCRIPT = r"""
(function(){
'use strict';
const data = JSON.parse(document.getElementById('report-data').textContent);
const eps = data.rows.map(r => Object.fromEntries(data.fields.map((f, i) => [f, r[i]])));
const $ = (tag, attrs, ...kids) => { const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (k === 'class') el.className = v; else if (k === 'text') el.textContent = v; else el.setAttribute(k, v); }
  for (const c of kids) if (c != null) el.append(c); return el; };
// --- details: chunk files beside the page, loaded on demand with a <script> element (works from file://)
const details = new Map(); const waiting = new Map();
window.__reportChunk = (k, list) => { for (const d of list) details.set(d.id, d); const w = waiting.get(k); if (w) w.resolve(); };
function loadChunk(k) {
  if (!waiting.has(k)) { let resolve, reject; const p = new Promise((a, b) => { resolve = a; reject = b; });
    waiting.set(k, {promise: p, resolve, reject});
    const s = $('script', {src: data.data + '/episodes-' + k + '.js'});
    s.onerror = () => reject(new Error('cannot load ' + s.src)); document.head.append(s); }
  return waiting.get(k).promise;
}
async function detailOf(id) { if (!details.has(id)) await loadChunk(Math.floor(id / data.chunk)); return details.get(id); }
// --- the episode list: filters and pages
const uniq = (key) => [...new Set(eps.map(e => String(e[key])))].sort();
const FILTERS = [['suite','suite'],['split','split'],['variant','variant'],['success','success'],['termination','termination'],['failure','failure class']];
const state = {}; let page = 0;
const filters = document.getElementById('filters');
for (const [key, label] of FILTERS) {
  const sel = $('select', {id: 'filter-' + key, 'data-key': key}, $('option', {value: '', text: 'all'}));
  for (const v of uniq(key)) sel.append($('option', {value: v, text: v}));
  sel.addEventListener('change', () => { state[key] = sel.value; page = 0; renderList(); });
  filters.append($('label', {}, label, sel));
}
const list = document.getElementById('episode-list');
const detail = document.getElementById('episode-detail');
function matches(e) { return FILTERS.every(([k]) => !state[k] || String(e[k]) === state[k]); }
function pager(box, n, size, current, go) {
  box.textContent = ''; const pages = Math.max(1, Math.ceil(n / size)); if (pages < 2) return;
  const prev = $('button', {text: '‹ previous', 'data-go': 'prev'}); prev.disabled = current === 0;
  const next = $('button', {text: 'next ›', 'data-go': 'next'}); next.disabled = current >= pages - 1;
  prev.addEventListener('click', () => go(current - 1)); next.addEventListener('click', () => go(current + 1));
  box.append(prev, next, 'page ' + (current + 1) + ' of ' + pages);
}
function renderList() {
  list.textContent = '';
  const shown = eps.filter(matches);
  const first = page * data.page, slice = shown.slice(first, first + data.page);
  document.getElementById('count').textContent = shown.length + ' of ' + eps.length + ' episodes' +
    (shown.length > data.page ? ' (showing ' + (first + 1) + '–' + (first + slice.length) + ')' : '');
  pager(document.getElementById('pager'), shown.length, data.page, page, (p) => { page = p; renderList(); });
  for (const e of slice) {
    const li = $('li', {'data-id': String(e.id), 'data-success': String(e.success), 'data-failure': e.failure},
      $('span', {class: e.success ? 'ok' : 'fail', text: e.success ? '✓ ' : '✗ '}),
      e.variant + ' · ' + e.split + '/' + e.episode.split('/').pop(), $('span', {class: 'tag', text: e.failure}));
    li.addEventListener('click', () => { for (const o of list.querySelectorAll('li.sel')) o.classList.remove('sel'); li.classList.add('sel'); show(e.id); });
    list.append(li);
  }
}
// --- one episode
function historyTable(d) {
  const t = $('table', {class: 'hist'}, $('thead', {}, $('tr', {}, $('th', {text: '#'}), $('th', {text: 'action'}), $('th', {text: 'feedback'}))));
  const body = $('tbody');
  d.history.forEach((h, i) => { const bad = String(h[1] || '').startsWith('Last action is invalid');
    body.append($('tr', {class: bad ? 'bad' : ''}, $('td', {text: String(i + 1)}), $('td', {text: String(h[0])}), $('td', {text: String(h[1] || '')}))); });
  t.append(body); return t;
}
function frame(im) {
  if (im && im.src) return $('img', {src: im.src, loading: 'lazy', alt: (im.name || 'frame') + ' ' + (im.size || []).join('×'), width: String((im.size || [256])[0])});
  const size = im && im.size && im.size[0] ? ' ' + im.size.join('×') : '';
  return $('span', {class: 'placeholder', text: '[image' + size + (im && im.skipped === 'budget' ? ': over the frame budget, run with record_images=true' : ': not recorded') + ']'});
}
function turn(role, cls, ...kids) { return $('div', {class: 'turn ' + cls}, $('span', {class: 'role', text: role}), ...kids); }
function callView(c, open) {
  const tokens = c.prompt_tokens != null ? ' · ' + c.prompt_tokens + ' prompt / ' + c.output_tokens + ' output tokens' : '';
  const latency = c.latency_s != null ? ' · ' + c.latency_s.toFixed(2) + ' s' + (c.batch > 1 ? ' (batch of ' + c.batch + ')' : '') : '';
  const d = $('details', {class: 'call', 'data-call': String(c.call)}, $('summary', {},
    'call ' + c.call + ' at step ' + c.step + (c.error ? ' — output error: ' + c.error : ' — ' + c.actions + ' action(s)'),
    $('span', {class: 'cost', text: tokens + latency})));
  if (open) d.open = true;
  const body = $('div', {class: 'call-body'});
  if (c.images.length) { const fr = $('div', {class: 'frames'});
    c.images.forEach((im, i) => fr.append($('figure', {}, frame(im), $('figcaption', {text: 'image ' + (i + 1) + ', what the model saw (' + (im.name || 'image') + ' ' + (im.size || []).join('×') + ')'}))));
    body.append(fr); }
  const chat = $('div', {class: 'chat'}); let img = 0;
  if (c.messages) for (const m of c.messages) {
    const parts = m.parts.map(p => { if (p.type !== 'image') return $('div', {class: 'text', text: p.text});
      const im = c.images[img++] || {size: p.size}; if (!im.src) return frame(im);
      return $('span', {class: 'placeholder image-ref', text: '[image ' + img + ': ' + (im.size || []).join('×') + ', shown at left]'}); });
    chat.append(turn(m.role, m.role, ...parts));
  } else chat.append($('p', {class: 'notes', text: 'Prompt not recorded (run with record_prompts=true).'}));
  chat.append(turn('answer (raw model output)', 'answer', $('div', {class: 'text', text: c.raw == null ? '(none)' : c.raw})));
  body.append(chat); d.append(body); return d;
}
function episodeView(e, d) {
  const box = $('div', {class: 'episode', 'data-id': String(e.id)});
  box.append($('h3', {text: e.variant + ' · ' + e.suite + '/' + e.episode + ' (seed ' + e.seed + ')'}));
  box.append($('p', {}, $('b', {text: 'Instruction: '}), d.instruction || '(not recorded)'));
  const gc = e.gc[1] ? e.gc[0] + '/' + e.gc[1] : '–';
  box.append($('p', {}, $('span', {class: e.success ? 'ok' : 'fail', text: e.success ? 'success' : 'failure'}),
    ' · failure class ', $('b', {text: e.failure}), ' · termination ' + (e.termination || '–') + ' · goal conditions ' + gc +
    ' · steps ' + e.steps + ' · invalid ' + e.invalid + ' · output errors ' + e.output_errors + (e.task_type ? ' · ' + e.task_type : '') +
    ' · ' + e.seconds + ' s' + (e.tokens ? ' · ' + e.tokens[0] + ' prompt / ' + e.tokens[1] + ' output tokens' : '')));
  if (d.task) box.append($('p', {class: 'notes', text: 'Task: ' + Object.entries(d.task).filter(([, v]) => v).map(([k, v]) => k + '=' + v).join(', ')}));
  if (e.error) box.append($('pre', {text: 'error (' + e.error + '): ' + d.error_message}));
  if (d.video) box.append($('video', {controls: '', preload: 'metadata', src: d.video, width: '320'}));
  if (d.history.length) { box.append($('h4', {text: 'Steps'})); box.append(historyTable(d)); }
  if (d.calls.length) { box.append($('h4', {text: 'Agent calls: what the model saw and said'}));
    d.calls.forEach((c, i) => box.append(callView(c, i === 0))); }
  return box;
}
async function show(id) { const e = eps[id]; const d = await detailOf(id);
  detail.textContent = ''; detail.append(episodeView(e, d)); return detail; }
// --- paired view: the baseline against one other variant, on the same episode key
const pairCtl = document.getElementById('pair-controls');
const others = data.variants.filter(v => v !== data.baseline);
const pairSel = $('select', {id: 'pair-variant'});
for (const v of others) pairSel.append($('option', {value: v, text: v}));
const dirSel = $('select', {id: 'pair-direction'},
  $('option', {value: 'gain', text: data.baseline + ' failed, other succeeded'}),
  $('option', {value: 'loss', text: data.baseline + ' succeeded, other failed'}));
pairCtl.append($('label', {}, 'compare ' + data.baseline + ' with', pairSel), $('label', {}, 'show', dirSel));
const byKey = new Map();
for (const e of eps) { const k = e.suite + '|' + e.split + '|' + e.episode + '|' + e.seed; if (!byKey.has(k)) byKey.set(k, {}); byKey.get(k)[e.variant] = e; }
const PAIR_PAGE = 20; let pairPage = 0;
async function renderPairs() {
  const out = document.getElementById('pair-list'); out.textContent = '';
  const other = pairSel.value; if (!other) { document.getElementById('pair-count').textContent = 'Only one variant: nothing to pair.'; return; }
  let gain = 0, loss = 0; const shown = [];
  for (const m of byKey.values()) { const a = m[data.baseline], b = m[other]; if (!a || !b || a.success === b.success) continue;
    if (b.success) gain++; else loss++;
    if ((dirSel.value === 'gain') === b.success) shown.push([a, b]); }
  document.getElementById('pair-count').textContent = 'Discordant pairs: ' + gain + ' where ' + data.baseline + ' failed and ' + other +
    ' succeeded, ' + loss + ' the reverse (McNemar uses exactly these). Showing ' + shown.length + '.';
  pager(document.getElementById('pair-pager'), shown.length, PAIR_PAGE, pairPage, (p) => { pairPage = p; renderPairs(); });
  const slice = shown.slice(pairPage * PAIR_PAGE, (pairPage + 1) * PAIR_PAGE);
  const loaded = await Promise.all(slice.map(([a, b]) => Promise.all([detailOf(a.id), detailOf(b.id)])));
  slice.forEach(([a, b], i) => out.append($('div', {class: 'pair'}, $('div', {}, episodeView(a, loaded[i][0])), $('div', {}, episodeView(b, loaded[i][1])))));
}
pairSel.addEventListener('change', () => { pairPage = 0; renderPairs(); }); dirSel.addEventListener('change', () => { pairPage = 0; renderPairs(); });
renderList();
window.report = {show, detailOf, renderPairs, eps};
renderPairs().then(() => document.body.setAttribute('data-ready', '1'),
  (err) => { document.body.setAttribute('data-ready', 'error'); console.error(String(err)); });
})();
"""
