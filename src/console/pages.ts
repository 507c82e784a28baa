/**
 * The console's pages, from what the API answered (its schemas' types): the tenant list, a tenant, a run, its dead
 * letters, and the confirmations of what cannot be undone. Names a customer wrote (tenants' organisations, records'
 * reasons, errors) carry `dir="auto"`, so Arabic text reads right to left inside the English frame.
 */
import type { z } from '@hono/zod-openapi';
import type { deadLetterPageSchema, eventPageSchema, outstandingLinksSchema, runListSchema, runSchema, runSummarySchema, tenantListSchema, tenantSchema } from '../api/schemas.js';
import { ENTITIES } from '../glossary.js';
import { badge, duration, formKeys, h, num, when, type Format, type Html } from './html.js';

export type Tenant = z.infer<typeof tenantSchema>;
type TenantList = z.infer<typeof tenantListSchema>;
type RunSummary = z.infer<typeof runSummarySchema>;
type Run = z.infer<typeof runSchema>;
type DeadLetterPage = z.infer<typeof deadLetterPageSchema>;
type Links = z.infer<typeof outstandingLinksSchema>;
type Events = z.infer<typeof eventPageSchema>;

/** The tenant list's filters: what `state` may be (the API's own words), with how the page names them. */
export const STATE_FILTERS = [
  ['needs_reconnect', 'Needs reconnect'],
  ['failing', 'Failing (last run failed)'],
  ['partial', 'Has dead letters'],
  ['waiting', 'Waiting (not connected yet)'],
  ['running', 'Running now'],
  ['awaiting_connection', 'Awaiting connection'],
  ['connected', 'Connected'],
] as const;
export type StateFilter = (typeof STATE_FILTERS)[number][0];

export const tenantHref = (id: string): string => `/console/tenants/${encodeURIComponent(id)}`;
const runHref = (tenant: string, run: string): string => `${tenantHref(tenant)}/runs/${encodeURIComponent(run)}`;

/** What a run did, in one line: the counts that are not zero. */
function countsLine(f: Format, total: Record<string, number> | undefined): Html {
  const parts = Object.entries(total ?? {}).filter(([, n]) => n > 0);
  if (parts.length === 0) return h`<span class="muted">no records</span>`;
  return h`${parts.map(([k, n], i) => h`${i > 0 ? ', ' : ''}${num(f, n)} ${k}`)}`;
}

/** The connection in a few words (the list) or nothing for a platform without one. */
function connectionCell(t: Tenant): Html {
  const c = t.connection;
  if (c === null) return h`<span class="muted">no link needed</span>`;
  return h`${badge(c.state)}${c.name !== undefined ? h` <span dir="auto">${c.name}</span>` : ''}`;
}

export function tenantListPage(f: Format, list: TenantList, o: { q: string; state: string; cursor?: string }): Html {
  const rows = list.items.map(
    (t) => h`<tr>
<th scope="row"><a href="${tenantHref(t.id)}" dir="auto">${t.id}</a></th>
<td>${t.platform}</td>
<td>${connectionCell(t)}</td>
<td>${t.running ? badge('running') : t.lastRun === null ? h`<span class="muted">never run</span>` : h`${badge(t.lastRun.outcome ?? t.lastRun.state)} ${when(f, t.lastRun.finishedAt ?? t.lastRun.startedAt)}`}</td>
<td>${t.lastRun === null ? '' : countsLine(f, t.lastRun.totals)}</td>
<td class="num">${t.deadLetters.total > 0 ? h`<a href="${tenantHref(t.id)}/dead-letters">${num(f, t.deadLetters.total)}</a>` : '0'}</td>
<td>${when(f, t.nextRunAt, 'not scheduled')}</td>
</tr>`,
  );
  const keep = { q: o.q, state: o.state };
  return h`<h1>Tenants</h1>
<form class="filters" method="get" action="/console/tenants" role="search">
<div><label for="q">Search (tenant id or organisation)</label><input id="q" name="q" type="search" value="${o.q}" maxlength="100"></div>
<div><label for="state">State</label><select id="state" name="state">
<option value=""${o.state === '' ? h` selected` : ''}>Any state</option>
${STATE_FILTERS.map(([v, label]) => h`<option value="${v}"${o.state === v ? h` selected` : ''}>${label}</option>`)}
</select></div>
<div><button type="submit" class="primary">Filter</button></div>
</form>
${
  rows.length === 0
    ? h`<p>No tenant matches${o.q !== '' || o.state !== '' ? h` these filters. <a href="/console/tenants">Show every tenant</a>` : '.'}</p>`
    : h`<table>
<caption class="muted">${o.cursor !== undefined ? 'A later page of ' : ''}${rows.length} tenant${rows.length === 1 ? '' : 's'}${list.next !== null ? ' on this page' : ''}</caption>
<thead><tr><th scope="col">Tenant</th><th scope="col">Platform</th><th scope="col">Connection</th><th scope="col">Last run</th><th scope="col">What it did</th><th scope="col" class="num">Dead letters</th><th scope="col">Next run</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
}
<nav class="pager" aria-label="Pages">
${o.cursor !== undefined ? h`<a href="/console/tenants${qs(keep)}">First page</a>` : ''}
${list.next !== null ? h`<a href="/console/tenants${qs({ ...keep, cursor: list.next })}" rel="next">Next page</a>` : ''}
</nav>`;
}

const qs = (params: Record<string, string | undefined>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
};

export interface TenantPageParts {
  tenant: Tenant;
  runs: z.infer<typeof runListSchema>['items'];
  /** Outstanding connect links (a platform connected by link), else undefined. */
  links: Links['items'] | undefined;
  /** Why links cannot be made here (links off), shown in place of the form. */
  linksOff?: string;
  events: Events['items'];
  csrf: string;
  once: () => string;
}

export function tenantPage(f: Format, p: TenantPageParts): Html {
  const t = p.tenant;
  const c = t.connection;
  return h`<h1><span dir="auto">${t.id}</span> <span class="muted">· ${t.platform}${t.source === 'api' ? ' · created over the API' : ''}</span></h1>
<section aria-labelledby="now">
<h2 id="now">Now</h2>
<dl class="facts">
<dt>Running</dt><dd>${t.running ? badge('running') : 'no'}</dd>
<dt>Last run</dt><dd>${t.lastRun === null ? 'never' : h`<a href="${runHref(t.id, t.lastRun.runId)}">${t.lastRun.runId}</a> ${badge(t.lastRun.outcome ?? t.lastRun.state)} ${when(f, t.lastRun.finishedAt ?? t.lastRun.startedAt)}`}</dd>
<dt>Next scheduled run</dt><dd>${when(f, t.nextRunAt, 'not scheduled here')}</dd>
<dt>Schedule</dt><dd>${scheduleText(t.schedule)}</dd>
<dt>Invoices waiting for their contact</dt><dd>${num(f, t.pendingInvoices)}</dd>
</dl>
<form method="post" action="${tenantHref(t.id)}/runs" class="actions">
${formKeys(p.csrf, p.once())}
<span>Run now:</span>
<button type="submit" name="mode" value="incremental" class="primary">Incremental</button>
<button type="submit" name="mode" value="full">Full</button>
<button type="submit" name="mode" value="reconcile">Reconcile</button>
</form>
</section>
<section aria-labelledby="connection">
<h2 id="connection">Connection</h2>
${
  c === null
    ? h`<p>A ${t.platform} tenant needs no connect link: it reads with the settings of its entry.</p>`
    : h`<dl class="facts">
<dt>State</dt><dd>${badge(c.state)}${c.reason !== undefined ? h` <span dir="auto">${c.reason}</span>` : ''}</dd>
<dt>Organisation</dt><dd>${c.name !== undefined ? h`<span dir="auto">${c.name}</span>` : ''} ${c.connection !== undefined ? h`<span class="muted mono">${c.connection}</span>` : ''}${c.name === undefined && c.connection === undefined ? h`<span class="muted">none yet</span>` : ''}</dd>
<dt>Connected</dt><dd>${when(f, c.connectedAt)}${c.via !== undefined ? h` <span class="muted">via ${c.via}</span>` : ''}</dd>
<dt>Token last refreshed</dt><dd>${when(f, c.refreshedAt)}</dd>
<dt>Refresh token age</dt><dd>${c.refreshTokenAgeDays !== undefined ? h`${num(f, c.refreshTokenAgeDays)} days${c.ageing === true ? h` ${badge('ageing')} <span class="muted">(ask the customer to reconnect before it expires)</span>` : ''}` : h`<span class="muted">unknown</span>`}</dd>
</dl>
${linksSection(f, p)}`
}
</section>
<section aria-labelledby="dead-letters">
<h2 id="dead-letters">Dead letters</h2>
${
  t.deadLetters.total === 0
    ? h`<p>None: every record read so far landed.</p>`
    : h`<p><a href="${tenantHref(t.id)}/dead-letters">${num(f, t.deadLetters.total)} dead letter${t.deadLetters.total === 1 ? '' : 's'}</a>: ${ENTITIES.map((e, i) => h`${i > 0 ? ', ' : ''}${num(f, t.deadLetters.byEntity[e])} ${e}`)}.</p>
<p class="actions"><a class="button" href="${tenantHref(t.id)}/dead-letters/retry">Retry dead letters…</a></p>`
}
</section>
<section aria-labelledby="runs">
<h2 id="runs">Runs</h2>
${runsTable(f, t.id, p.runs)}
</section>
<section aria-labelledby="deliveries">
<h2 id="deliveries">Run webhook deliveries</h2>
${deliveries(f, t, p)}
</section>`;
}

function scheduleText(s: Tenant['schedule']): Html {
  const incremental = s.cron !== null ? `incremental at cron ${s.cron}${s.tz !== null ? ` (${s.tz})` : ''}` : `incremental every ${duration(s.everyMs)}`;
  return h`${incremental}; reconcile every ${duration(s.reconcileEveryMs)}`;
}

function linksSection(f: Format, p: TenantPageParts): Html {
  const t = p.tenant;
  const connected = t.connection?.state === 'connected';
  if (p.links === undefined) return h`<p class="muted">${p.linksOff ?? 'Connect links are off on this worker.'}</p>`;
  return h`<h3>Connect links</h3>
<form method="post" action="${tenantHref(t.id)}/connect-links" class="actions">
${formKeys(p.csrf, p.once())}
<label for="expires">Link works for</label>
<select id="expires" name="expires"><option value="1h">1 hour</option><option value="1d">1 day</option><option value="7d" selected>7 days</option><option value="30d">30 days</option></select>
${connected ? h`<input type="hidden" name="reconnect" value="true">` : ''}
<button type="submit" class="primary">${connected ? 'Create reconnect link' : 'Create connect link'}</button>
</form>
${
  p.links.length === 0
    ? h`<p class="muted">No outstanding link.</p>`
    : h`<table><caption class="muted">Outstanding links (their addresses are not kept: make a new one to send again)</caption>
<thead><tr><th scope="col">Link</th><th scope="col">Made</th><th scope="col">By</th><th scope="col">Expires</th><th scope="col">Kind</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${p.links.map(
        (l) => h`<tr><td class="mono">${l.linkId}</td><td>${when(f, l.createdAt)}</td><td>${l.by}</td><td>${when(f, l.expiresAt)}</td><td>${l.reconnect ? 'reconnect' : 'connect'}</td>
<td><form method="post" action="${tenantHref(t.id)}/connect-links/${encodeURIComponent(l.linkId)}/revoke" class="inline">${formKeys(p.csrf)}<button type="submit" class="danger" aria-label="Revoke link ${l.linkId}">Revoke</button></form></td></tr>`,
      )}</tbody></table>`
}
${t.connection !== null && t.connection.state !== 'awaiting_connection' ? h`<p class="actions"><a class="button" href="${tenantHref(t.id)}/connection/revoke">Revoke the connection…</a></p>` : ''}`;
}

export function runsTable(f: Format, tenant: string, runs: readonly RunSummary[]): Html {
  if (runs.length === 0) return h`<p>No run yet.</p>`;
  return h`<table>
<thead><tr><th scope="col">Run</th><th scope="col">Mode</th><th scope="col">Trigger</th><th scope="col">Outcome</th><th scope="col">Started</th><th scope="col">Took</th><th scope="col">What it did</th><th scope="col">Errors</th></tr></thead>
<tbody>${runs.map((r) => {
    const took = r.finishedAt !== null && r.startedAt !== null ? Date.parse(r.finishedAt) - Date.parse(r.startedAt) : null;
    return h`<tr><th scope="row"><a href="${runHref(tenant, r.runId)}">${r.runId}</a></th><td>${r.mode}</td><td>${r.trigger ?? ''}</td><td>${badge(r.outcome ?? r.state)}</td><td>${when(f, r.startedAt)}</td><td>${duration(took)}</td><td>${countsLine(f, r.totals)}</td><td dir="auto">${r.errorCount > 0 ? h`${num(f, r.errorCount)}: ${r.firstError ?? ''}` : ''}</td></tr>`;
  })}</tbody></table>`;
}

function deliveries(f: Format, t: Tenant, p: TenantPageParts): Html {
  const last = t.lastWebhook;
  const rows = p.events.map(
    (e) => h`<tr><td class="mono">${e.id}</td><td>${e.type}</td><td>${when(f, e.timestamp)}</td><td>${badge(e.delivery.state)}${e.delivery.statusCode !== undefined ? h` <span class="muted">HTTP ${e.delivery.statusCode}</span>` : ''}${e.delivery.error !== undefined ? h` <span dir="auto">${e.delivery.error}</span>` : ''}</td><td class="num">${num(f, e.delivery.attempts)}</td>
<td><form method="post" action="/console/events/${encodeURIComponent(e.id)}/redeliver" class="inline">${formKeys(p.csrf)}<input type="hidden" name="tenant" value="${t.id}"><button type="submit" aria-label="Redeliver ${e.id}">Redeliver</button></form></td></tr>`,
  );
  return h`${last === null ? h`<p class="muted">No event sent yet.</p>` : h`<p>Last: ${last.type} ${badge(last.state)} ${when(f, last.at)}${last.statusCode !== undefined ? ` (HTTP ${last.statusCode})` : ''}</p>`}
${rows.length === 0 ? '' : h`<table><caption class="muted">The latest events of this tenant, newest first</caption><thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">At</th><th scope="col">Delivery</th><th scope="col" class="num">Attempts</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>${rows}</tbody></table>`}`;
}

export function runPage(f: Format, tenant: string, r: Run): Html {
  const byEntity = ENTITIES.map((e) => [e, r.counts.byEntity[e]] as const);
  const kinds = [...new Set(byEntity.flatMap(([, c]) => Object.keys(c)))].sort();
  return h`<h1>Run ${r.runId} <span class="muted">of <span dir="auto">${tenant}</span></span></h1>
<dl class="facts">
<dt>Outcome</dt><dd>${badge(r.outcome ?? r.state)}${r.state === 'running' && r.phase !== null ? h` <span class="muted">now: ${r.phase}</span>` : ''}</dd>
<dt>Mode</dt><dd>${r.mode}${r.trigger !== null ? h` <span class="muted">asked by ${r.trigger}</span>` : ''}</dd>
<dt>Requested</dt><dd>${when(f, r.requestedAt)}</dd>
<dt>Started</dt><dd>${when(f, r.startedAt)}</dd>
<dt>Finished</dt><dd>${r.finishedAt === null ? h`<span class="muted">not yet</span>` : when(f, r.finishedAt)}</dd>
<dt>Took</dt><dd>${duration(r.durationMs)}</dd>
${r.lastProgressAt !== null ? h`<dt>Last progress</dt><dd>${when(f, r.lastProgressAt)}</dd>` : ''}
${r.waitingOn !== null ? h`<dt>Waiting on</dt><dd>${r.waitingOn}</dd>` : ''}
${r.stalls !== null ? h`<dt>Stalls</dt><dd>${num(f, r.stalls.count)}: ${r.stalls.lastReason}</dd>` : ''}
</dl>
${r.state === 'running' || r.state === 'queued' || r.state === 'delayed' ? h`<p class="muted" role="status">This page reloads every 5 seconds until the run ends.</p>` : ''}
<h2>Records</h2>
${
  kinds.length === 0
    ? h`<p class="muted">No record counted.</p>`
    : h`<table><thead><tr><th scope="col">Entity</th>${kinds.map((k) => h`<th scope="col" class="num">${k}</th>`)}</tr></thead>
<tbody>${byEntity.map(([e, c]) => h`<tr><th scope="row">${e}</th>${kinds.map((k) => h`<td class="num">${num(f, c[k] ?? 0)}</td>`)}</tr>`)}</tbody></table>`
}
<h2>Errors</h2>
${r.errors.length === 0 ? h`<p class="muted">None.</p>` : h`<ul>${r.errors.map((e) => h`<li dir="auto">${e}</li>`)}</ul>${r.errorsOmitted > 0 ? h`<p class="muted">and ${num(f, r.errorsOmitted)} more</p>` : ''}`}
<h2>Dead letters this run made</h2>
${r.deadLetters.items.length === 0 ? h`<p class="muted">None still there.</p>` : deadLetterTable(f, r.deadLetters.items)}
${r.deadLetters.more ? h`<p><a href="${tenantHref(tenant)}/dead-letters">All dead letters of ${tenant}</a></p>` : ''}`;
}

function deadLetterTable(f: Format, items: DeadLetterPage['items']): Html {
  return h`<table><thead><tr><th scope="col">Entity</th><th scope="col">Where</th><th scope="col">Reason</th><th scope="col">Code</th><th scope="col" class="num">Attempts</th><th scope="col">First seen</th><th scope="col">Last tried</th><th scope="col">Retry pushes it</th></tr></thead>
<tbody>${items.map(
    (d) => h`<tr><td>${d.entity}</td><td class="mono" dir="auto">${d.place ?? d.platformId ?? d.key}</td><td dir="auto">${d.reason}${d.detail !== undefined ? h`<br><span class="muted">${d.detail}</span>` : ''}</td><td class="mono">${d.code}</td><td class="num">${num(f, d.attempts)}</td><td>${when(f, d.firstAt)}</td><td>${when(f, d.at)}</td><td>${d.replayable ? 'yes' : h`no <span class="muted">(fix the source)</span>`}</td></tr>`,
  )}</tbody></table>`;
}

export function deadLettersPage(f: Format, t: Tenant, page: DeadLetterPage, o: { entity: string; cursor?: string }): Html {
  return h`<h1>Dead letters <span class="muted">of <span dir="auto">${t.id}</span></span></h1>
<p>${num(f, t.deadLetters.total)} in all: ${ENTITIES.map((e, i) => h`${i > 0 ? ', ' : ''}${num(f, t.deadLetters.byEntity[e])} ${e}`)}. Newest first.</p>
<div class="actions">
<form class="filters" method="get" action="${tenantHref(t.id)}/dead-letters">
<div><label for="entity">Entity</label><select id="entity" name="entity"><option value="">Every entity</option>${ENTITIES.map((e) => h`<option value="${e}"${o.entity === e ? h` selected` : ''}>${e}</option>`)}</select></div>
<div><button type="submit">Filter</button></div>
</form>
${t.deadLetters.total > 0 ? h`<a class="button" href="${tenantHref(t.id)}/dead-letters/retry">Retry dead letters…</a>` : ''}
</div>
${page.items.length === 0 ? h`<p>No dead letter${o.entity !== '' ? ` of ${o.entity}` : ''}.</p>` : deadLetterTable(f, page.items)}
<nav class="pager" aria-label="Pages">
${o.cursor !== undefined ? h`<a href="${tenantHref(t.id)}/dead-letters${qs({ entity: o.entity })}">Newest</a>` : ''}
${page.next !== null ? h`<a href="${tenantHref(t.id)}/dead-letters${qs({ entity: o.entity, cursor: page.next })}" rel="next">Older</a>` : ''}
</nav>`;
}

/** The replay's confirmation, in the CLI's words (`dead-letters retry`). */
export function retryConfirmPage(f: Format, t: Tenant, csrf: string, once: string): Html {
  return h`<h1>Retry the dead letters of <span dir="auto">${t.id}</span>?</h1>
<p>This queues a replay of ${t.id}'s dead letters: ${num(f, t.deadLetters.total)} dead letters (${ENTITIES.map((e, i) => h`${i > 0 ? ', ' : ''}${num(f, t.deadLetters.byEntity[e])} ${e}`)}).
Records kept with their dead letters are pushed again; a bad source line has no record to push: fix the line it names, and the next run reads it again.</p>
<form method="post" action="${tenantHref(t.id)}/dead-letters/replay" class="actions">
${formKeys(csrf, once)}
<button type="submit" class="primary">Queue the replay</button>
<a href="${tenantHref(t.id)}">Cancel</a>
</form>`;
}

export function revokeConfirmPage(t: Tenant, csrf: string): Html {
  const c = t.connection;
  return h`<h1>Revoke the connection of <span dir="auto">${t.id}</span>?</h1>
<p>This tells ${t.platform} to end the grant of ${c?.name !== undefined ? h`<span dir="auto">${c.name}</span>` : 'this organisation'}, deletes the tenant's tokens and revokes its outstanding connect links.
Its runs wait until the customer connects again with a new link. It cannot be undone.</p>
<form method="post" action="${tenantHref(t.id)}/connection/revoke" class="actions">
${formKeys(csrf)}
<button type="submit" class="danger">Revoke the connection</button>
<a href="${tenantHref(t.id)}">Cancel</a>
</form>`;
}

export function linkMadePage(f: Format, tenant: string, link: { url: string; linkId: string; expiresAt: string; reconnect: boolean }): Html {
  return h`<h1>${link.reconnect ? 'Reconnect' : 'Connect'} link for <span dir="auto">${tenant}</span></h1>
<p>Send this address to the customer. It works once, until ${when(f, link.expiresAt)}. It is shown only now: it is not kept.</p>
<p><label for="link-url">Link</label><br><input id="link-url" class="link-url" type="text" readonly value="${link.url}" data-copy></p>
<p class="muted">Link id <span class="mono">${link.linkId}</span> (revoke it from the tenant's page).</p>
<p><a href="${tenantHref(tenant)}">Back to ${tenant}</a></p>`;
}

export function signInPage(token: string, o: { error?: string; next?: string }): Html {
  return h`<div class="signin">
<h1>Sign in</h1>
<p>Sign in with an API key of this worker (API_KEYS). The key stays on the server: the browser keeps only a session cookie.</p>
${o.error !== undefined ? h`<div class="flash error" role="alert">${o.error}</div>` : ''}
<form method="post" action="/console/sign-in">
<input type="hidden" name="_csrf" value="${token}">
${o.next !== undefined ? h`<input type="hidden" name="next" value="${o.next}">` : ''}
<label for="key">API key</label>
<input id="key" name="key" type="password" autocomplete="current-password" required>
<button type="submit" class="primary">Sign in</button>
</form>
</div>`;
}

export function messagePage(title: string, text: string | Html, back?: readonly [string, string]): Html {
  return h`<h1>${title}</h1><p>${text}</p>${back !== undefined ? h`<p><a href="${back[1]}">${back[0]}</a></p>` : ''}`;
}
