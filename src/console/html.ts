/**
 * The console's markup: a tagged template that escapes every value it is given (text, attribute values) unless the
 * value is markup made here already, the page's frame (landmarks, the signed-in key, sign-out), and how numbers,
 * times and states read. Nothing is loaded from outside (Content-Security-Policy `default-src 'self'`).
 */

/** Markup made by `h` (already escaped). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const escape = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  if (typeof value === 'string') return escape(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return escape(JSON.stringify(value));
}

/** Markup with its values escaped: `h\`<td>${name}</td>\``; arrays are joined; undefined, null and false are nothing. */
export function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** How this operator reads numbers: the first language of Accept-Language Intl knows, else en. */
export function localeOf(acceptLanguage: string | undefined): string {
  for (const part of (acceptLanguage ?? '').split(',')) {
    const tag = part.split(';')[0]?.trim();
    if (!tag || tag === '*') continue;
    try {
      const [supported] = Intl.NumberFormat.supportedLocalesOf(tag);
      if (supported !== undefined) return supported;
    } catch {
      // Not a language tag: the next one.
    }
  }
  return 'en';
}

export interface Format {
  locale: string;
  now: number;
}

export const num = (f: Format, n: number): string => new Intl.NumberFormat(f.locale).format(n);

/** An ISO time as `2026-12-02 11:20 UTC` in a <time>, with how long ago (or in how long) in its title. */
export function when(f: Format, iso: string | null | undefined, none = 'never'): Html {
  if (iso === null || iso === undefined) return h`<span class="muted">${none}</span>`;
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return h`${iso}`;
  const shown = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return h`<time datetime="${iso}" title="${iso}">${shown}</time> <span class="muted">(${relative(f.now - ms)})</span>`;
}

export function relative(ms: number): string {
  const future = ms < 0;
  const a = Math.abs(ms);
  const words =
    a < 60_000 ? `${Math.max(0, Math.round(a / 1000))} s` : a < 3_600_000 ? `${Math.round(a / 60_000)} min` : a < 172_800_000 ? `${Math.round(a / 3_600_000)} h` : `${Math.round(a / 86_400_000)} d`;
  return future ? `in ${words}` : `${words} ago`;
}

export function duration(ms: number | null): string {
  if (ms === null) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms < 3_600_000) {
    const s = Math.round((ms % 60_000) / 1000);
    return `${Math.floor(ms / 60_000)} min${s > 0 ? ` ${s} s` : ''}`;
  }
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}

/** A state as a badge: its words, and a class for its colour (the words say it all without colour). */
export function badge(word: string | null | undefined): Html {
  if (word === null || word === undefined) return h`<span class="badge">none</span>`;
  const tone = /^(succeeded|connected|delivered)$/.test(word)
    ? 'good'
    : /^(failed|needs_reconnect|needs reconnect)$/.test(word)
      ? 'bad'
      : /^(partial|waiting|awaiting_connection|retrying|no_receiver|running|queued|delayed|pending)$/.test(word)
        ? 'warn'
        : 'plain';
  return h`<span class="badge ${tone}">${word.replace(/_/g, ' ')}</span>`;
}

export interface Frame {
  title: string;
  /** The signed-in key (absent: the sign-in page). */
  keyName?: string;
  csrf?: string;
  /** Reload the page after this many seconds (a run under way). */
  refreshS?: number;
  /** Where the page sits: [label, href] pairs, the last one this page. */
  crumbs?: readonly (readonly [string, string])[];
  /** A message above the content: what an action did, or why it did not. */
  flash?: { kind: 'ok' | 'error'; text: string | Html };
}

export function page(f: Frame, body: Html): Html {
  const crumbs = f.crumbs ?? [];
  return h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${f.refreshS !== undefined ? h`<meta http-equiv="refresh" content="${f.refreshS}">` : ''}
<title>${f.title} · collections-sync console</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<span class="brand">collections-sync console</span>
${
  f.keyName !== undefined
    ? h`<nav aria-label="Main"><a href="/console/tenants">Tenants</a></nav>
<form class="signout" method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="${f.csrf ?? ''}"><span class="muted">Signed in with key <strong>${f.keyName}</strong></span> <button type="submit">Sign out</button></form>`
    : ''
}
</header>
${crumbs.length > 1 ? h`<nav aria-label="Breadcrumb" class="crumbs"><ol>${crumbs.map(([label, href], i) => (i === crumbs.length - 1 ? h`<li><a href="${href}" aria-current="page" dir="auto">${label}</a></li>` : h`<li><a href="${href}" dir="auto">${label}</a></li>`))}</ol></nav>` : ''}
<main id="main">
${f.flash !== undefined ? h`<div class="flash ${f.flash.kind}" role="${f.flash.kind === 'error' ? 'alert' : 'status'}">${f.flash.text}</div>` : ''}
${body}
</main>
</body>
</html>
`;
}

/** A hidden CSRF field, and a once-key (the form's Idempotency-Key: a second submit of the same form does nothing more). */
export function formKeys(csrf: string, once?: string): Html {
  return h`<input type="hidden" name="_csrf" value="${csrf}">${once !== undefined ? h`<input type="hidden" name="_once" value="${once}">` : ''}`;
}

export const CSS = `
:root{--fg:#1b1f24;--muted:#59636e;--bg:#fff;--line:#d1d9e0;--accent:#0a58ca;--good:#116329;--bad:#a40e26;--warn:#7d4e00;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans Arabic",sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:2}
header.top{display:flex;gap:1.5rem;align-items:center;flex-wrap:wrap;padding:.6rem 1.5rem;border-bottom:1px solid var(--line);background:var(--soft)}
.brand{font-weight:700}
header.top nav a{margin-right:1rem}
.signout{margin-left:auto;display:flex;gap:.6rem;align-items:center}
main{padding:1rem 1.5rem 3rem;max-width:90rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}h2{font-size:1.15rem;margin:1.8rem 0 .6rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
.crumbs ol{list-style:none;display:flex;gap:.4rem;padding:.5rem 1.5rem 0;margin:0;flex-wrap:wrap}.crumbs li+li::before{content:"/";margin-right:.4rem;color:var(--muted)}
table{border-collapse:collapse;width:100%;margin:.4rem 0}
th,td{text-align:start;padding:.35rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num,th.num{text-align:end;font-variant-numeric:tabular-nums}
.muted{color:var(--muted)}
.badge{display:inline-block;padding:0 .45rem;border-radius:.6rem;border:1px solid currentColor;font-size:.85em;white-space:nowrap}
.badge.good{color:var(--good)}.badge.bad{color:var(--bad)}.badge.warn{color:var(--warn)}.badge.plain{color:var(--muted)}
.flash{padding:.6rem .9rem;border-radius:.3rem;margin:.4rem 0 1rem;border:1px solid}
.flash.ok{border-color:var(--good);background:#eef8f0}.flash.error{border-color:var(--bad);background:#fdf0f1}
form.inline{display:inline}
.actions{display:flex;gap:.6rem;flex-wrap:wrap;align-items:center;margin:.5rem 0}
button,.button{font:inherit;padding:.3rem .8rem;border:1px solid var(--accent);background:#fff;color:var(--accent);border-radius:.3rem;cursor:pointer;text-decoration:none;display:inline-block}
button.primary{background:var(--accent);color:#fff}
button.danger{border-color:var(--bad);color:var(--bad)}
input,select{font:inherit;padding:.3rem .4rem;border:1px solid #8c959f;border-radius:.3rem}
label{margin-right:.3rem}
.filters{display:flex;gap:1rem;flex-wrap:wrap;align-items:end;margin-bottom:.6rem}
.filters div{display:flex;flex-direction:column}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.4rem 0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.link-url{width:100%;max-width:60rem;font-family:ui-monospace,monospace}
.pager{display:flex;gap:1rem;margin:.6rem 0}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em}
.signin{max-width:26rem;margin:3rem auto}
.signin input{width:100%;margin:.3rem 0 .8rem}
`;

/** Progressive enhancement only: a copy button beside a connect link. The page works without it. */
export const JS = `
document.querySelectorAll('[data-copy]').forEach(function (input) {
  var b = document.createElement('button');
  b.type = 'button';
  b.textContent = 'Copy';
  b.addEventListener('click', function () {
    input.select();
    if (navigator.clipboard) navigator.clipboard.writeText(input.value).then(function () { b.textContent = 'Copied'; });
  });
  input.insertAdjacentElement('afterend', b);
});
`;
