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
"""

SCRIPT = r"""
(function(){
'use strict';
const data = JSON.parse(document.getElementById('report-data').textContent);
const eps = data.episodes;
const $ = (tag, attrs, ...kids) => { const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (k === 'class') el.className = v; else if (k === 'text') el.textContent = v; else el.setAttribute(k, v); }
  for (const c of kids) if (c != null) el.append(c); return el; };
const uniq = (key) => [...new Set(eps.map(e => String(e[key])))].sort();
const FILTERS = [['suite','suite'],['split','split'],['variant','variant'],['success','success'],['termination','termination'],['failure','failure class']];
const state = {};
const filters = document.getElementById('filters');
for (const [key, label] of FILTERS) {
  const sel = $('select', {id: 'filter-' + key, 'data-key': key}, $('option', {value: '', text: 'all'}));
  for (const v of uniq(key)) sel.append($('option', {value: v, text: v}));
  sel.addEventListener('change', () => { state[key] = sel.value; renderList(); });
  filters.append($('label', {}, label, sel));
}
const list = document.getElementById('episode-list');
const detail = document.getElementById('episode-detail');
function matches(e) { return FILTERS.every(([k]) => !state[k] || String(e[k]) === state[k]); }
function renderList() {
  list.textContent = '';
  const shown = eps.filter(matches);
  document.getElementById('count').textContent = shown.length + ' of ' + eps.length + ' episodes';
  for (const e of shown) {
    const li = $('li', {'data-id': String(e.id), 'data-success': String(e.success), 'data-failure': e.failure},
      $('span', {class: e.success ? 'ok' : 'fail', text: e.success ? '✓ ' : '✗ '}),
      e.variant + ' · ' + e.split + '/' + e.episode.split('/').pop(), $('span', {class: 'tag', text: e.failure}));
    li.addEventListener('click', () => { for (const o of list.querySelectorAll('li.sel')) o.classList.remove('sel'); li.classList.add('sel'); showEpisode(detail, e); });
    list.append(li);
  }
}
function historyTable(e) {
  const t = $('table', {class: 'hist'}, $('thead', {}, $('tr', {}, $('th', {text: '#'}), $('th', {text: 'action'}), $('th', {text: 'feedback'}))));
  const body = $('tbody');
  e.history.forEach((h, i) => { const bad = String(h[1] || '').startsWith('Last action is invalid');
    body.append($('tr', {class: bad ? 'bad' : ''}, $('td', {text: String(i + 1)}), $('td', {text: String(h[0])}), $('td', {text: String(h[1] || '')}))); });
  t.append(body); return t;
}
function episodeView(e) {
  const box = $('div', {class: 'episode', 'data-id': String(e.id)});
  box.append($('h3', {text: e.variant + ' · ' + e.suite + '/' + e.episode + ' (seed ' + e.seed + ')'}));
  box.append($('p', {}, $('b', {text: 'Instruction: '}), e.instruction || '(not recorded)'));
  const gc = e.gc[1] ? e.gc[0] + '/' + e.gc[1] : '–';
  box.append($('p', {}, $('span', {class: e.success ? 'ok' : 'fail', text: e.success ? 'success' : 'failure'}),
    ' · failure class ', $('b', {text: e.failure}), ' · termination ' + (e.termination || '–') + ' · goal conditions ' + gc +
    ' · steps ' + e.steps + ' · invalid ' + e.invalid + ' · output errors ' + e.output_errors + (e.task_type ? ' · ' + e.task_type : '')));
  if (e.task) box.append($('p', {class: 'notes', text: 'Task: ' + Object.entries(e.task).filter(([, v]) => v).map(([k, v]) => k + '=' + v).join(', ')}));
  if (e.error) box.append($('pre', {text: 'error (' + e.error + '): ' + e.error_message}));
  if (e.video) { const v = $('video', {controls: '', src: e.video, width: '320'}); box.append(v); }
  if (e.history.length) { box.append($('h4', {text: 'Steps'})); box.append(historyTable(e)); }
  if (e.calls.length) {
    box.append($('h4', {text: 'Agent calls'}));
    for (const c of e.calls) {
      const d = $('details', {}, $('summary', {text: 'call ' + c.call + ' at step ' + c.step + (c.error ? ' — output error: ' + c.error : ' — ' + c.actions + ' action(s)')}));
      if (c.prompt) d.append($('h5', {text: 'prompt'}), $('pre', {text: c.prompt}));
      d.append($('h5', {text: 'raw output'}), $('pre', {text: c.raw == null ? '(none)' : c.raw}));
      box.append(d);
    }
  }
  return box;
}
function showEpisode(target, e) { target.textContent = ''; target.append(episodeView(e)); }
// Paired view: the baseline against one other variant, on the same episode key.
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
function renderPairs() {
  const out = document.getElementById('pair-list'); out.textContent = '';
  const other = pairSel.value; if (!other) { document.getElementById('pair-count').textContent = 'Only one variant: nothing to pair.'; return; }
  let gain = 0, loss = 0; const shown = [];
  for (const m of byKey.values()) { const a = m[data.baseline], b = m[other]; if (!a || !b || a.success === b.success) continue;
    if (b.success) gain++; else loss++;
    if ((dirSel.value === 'gain') === b.success) shown.push([a, b]); }
  document.getElementById('pair-count').textContent = 'Discordant pairs: ' + gain + ' where ' + data.baseline + ' failed and ' + other +
    ' succeeded, ' + loss + ' the reverse (McNemar uses exactly these). Showing ' + shown.length + '.';
  for (const [a, b] of shown.slice(0, 200)) out.append($('div', {class: 'pair'}, $('div', {}, episodeView(a)), $('div', {}, episodeView(b))));
}
pairSel.addEventListener('change', renderPairs); dirSel.addEventListener('change', renderPairs);
renderList(); renderPairs();
document.body.setAttribute('data-ready', '1');
})();
"""
