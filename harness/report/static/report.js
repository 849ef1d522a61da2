(function(){
'use strict';
const data = JSON.parse(document.getElementById('report-data').textContent);
const eps = data.rows.map(r => Object.fromEntries(data.fields.map((f, i) => [f, r[i]])));
for (const e of eps) e.run = data.runs[e.run];  // runs are sent once, rows name them by position
// --- each episode's link: #episode=<variant>:<suite>:<split>:<episode id>:<seed> (the run's id appended
// when two runs of one variant hold the same episode)
const esc = (s) => String(s).replace(/[%:#?&\s]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
const byLink = new Map();
for (const e of eps) { let k = [e.variant, e.suite, e.split, e.episode, e.seed].map(esc).join(':');
  if (byLink.has(k)) k += ':' + esc(e.run); e.link = k; byLink.set(k, e); }
const decoded = (s) => { try { return decodeURIComponent(s); } catch (err) { return s; } };
let linkText = null;  // links as text (a browser may escape a typed link's characters otherwise than we do)
const byText = () => linkText || (linkText = new Map(eps.map(e => [decoded(e.link), e])));
const label = (e) => e.variant + ' · ' + e.suite + '/' + e.split + '/' + e.episode.split('/').pop();
// --- search: episode id and instruction text; the instructions (on the page, apart) are read on first use
let instructions = null;
function instructionOf(e) {
  if (!instructions) { const s = JSON.parse(document.getElementById('report-search').textContent);
    const texts = s.texts.map(t => t.toLowerCase()); instructions = s.of.map(i => i < 0 ? '' : texts[i]); }
  return instructions[e.id];
}
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
const state = {}; let page = 0; let query = '';
const filters = document.getElementById('filters');
const search = document.getElementById('search'); let typing = null;
search.addEventListener('input', () => { clearTimeout(typing); typing = setTimeout(() => {
  query = search.value.trim().toLowerCase(); page = 0; renderList(); }, 120); });
for (const [key, label] of FILTERS) {
  const sel = $('select', {id: 'filter-' + key, 'data-key': key}, $('option', {value: '', text: 'all'}));
  for (const v of uniq(key)) sel.append($('option', {value: v, text: v}));
  sel.addEventListener('change', () => { state[key] = sel.value; page = 0; renderList(); });
  filters.append($('label', {}, label, sel));
}
const list = document.getElementById('episode-list');
const detail = document.getElementById('episode-detail');
function matches(e) {
  if (!FILTERS.every(([k]) => !state[k] || String(e[k]) === state[k])) return false;
  return !query || label(e).toLowerCase().includes(query) || e.episode.toLowerCase().includes(query) || instructionOf(e).includes(query);
}
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
      $('a', {href: '#episode=' + e.link, class: 'ep-link', text: label(e)}), $('span', {class: 'tag', text: e.failure}));
    if (current === e.id) li.classList.add('sel');
    // the link changes the URL's fragment; a click beside it does the same; hashchange opens the episode
    li.addEventListener('click', (ev) => { if (ev.target.closest('a')) return; location.hash = 'episode=' + e.link; });
    list.append(li);
  }
}
// --- the URL's fragment: #episode=<link> opens that episode, on load and on every change
let current = null;
function select(id) { current = id; for (const o of list.querySelectorAll('li')) o.classList.toggle('sel', +o.dataset.id === id); }
async function openHash() {
  const m = /^#episode=(.+)$/.exec(location.hash); if (!m) return null;
  const link = decoded(m[1]);
  const e = byLink.get(m[1]) || byText().get(link);
  if (!e) { detail.textContent = ''; detail.append($('p', {class: 'notes', text: 'No episode ' + link + ' in this report.'})); return null; }
  let shown = eps.filter(matches);
  if (!shown.includes(e)) { for (const [k] of FILTERS) { state[k] = ''; document.getElementById('filter-' + k).value = ''; }
    query = ''; search.value = ''; shown = eps.filter(matches); }
  page = Math.floor(shown.indexOf(e) / data.page); renderList(); select(e.id);
  const box = await show(e.id); box.scrollIntoView({block: 'nearest'}); return box;
}
window.addEventListener('hashchange', () => { openHash().catch((err) => console.error(String(err))); });
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
function actionsTable(actions) {
  const fmt = (x) => (x < 0 ? '' : ' ') + x.toFixed(3);
  const body = $('tbody');
  actions.forEach((a, i) => body.append($('tr', {}, $('td', {text: String(i + 1)}), $('td', {class: 'vec', text: a.map(fmt).join(' ')}))));
  return $('div', {class: 'actions'}, $('table', {class: 'hist actions'},
    $('thead', {}, $('tr', {}, $('th', {text: '#'}), $('th', {text: 'action (' + (actions[0] || []).length + '-D, rounded to 3 decimals)'}))), body));
}
function episodeView(e, d) {
  const box = $('div', {class: 'episode', 'data-id': String(e.id)});
  box.append($('h3', {}, e.variant + ' · ' + e.suite + '/' + e.episode + ' (seed ' + e.seed + ') ',
    $('a', {href: '#episode=' + e.link, class: 'permalink', title: 'link to this episode', text: '#'})));
  box.append($('p', {}, $('b', {text: 'Instruction: '}), d.instruction || '(not recorded)'));
  const gc = e.goals[1] ? e.goals[0] + '/' + e.goals[1] : '–';
  box.append($('p', {}, $('span', {class: e.success ? 'ok' : 'fail', text: e.success ? 'success' : 'failure'}),
    ' · failure class ', $('b', {text: e.failure}), ' · termination ' + (e.termination || '–') + ' · goal conditions ' + gc +
    ' · steps ' + e.steps + ' · invalid ' + e.invalid + ' · output errors ' + e.output_errors + (e.task_type ? ' · ' + e.task_type : '') +
    ' · ' + e.seconds + ' s' + (e.tokens ? ' · ' + e.tokens[0] + ' prompt / ' + e.tokens[1] + ' output tokens' : '')));
  if (d.task) box.append($('p', {class: 'notes', text: 'Task: ' + Object.entries(d.task).filter(([, v]) => v).map(([k, v]) => k + '=' + v).join(', ')}));
  if (e.error) box.append($('pre', {text: 'error (' + e.error + '): ' + d.error_message}));
  if (d.video) box.append($('video', {controls: '', preload: 'metadata', src: d.video, width: '320'}));
  if (d.history.length) { box.append($('h4', {text: 'Steps'})); box.append(historyTable(d)); }
  if (d.actions && d.actions.length) { box.append($('h4', {text: 'Executed actions, per step'})); box.append(actionsTable(d.actions)); }
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
window.report = {show, detailOf, renderPairs, openHash, eps};
Promise.all([renderPairs(), openHash()]).then(() => document.body.setAttribute('data-ready', '1'),
  (err) => { document.body.setAttribute('data-ready', 'error'); console.error(String(err)); });
})();
