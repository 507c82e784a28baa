import { describe, expect, it } from 'vitest';
import { daysBetween } from '../../src/dates.js';
import {
  amountDue,
  formatAmount,
  normalisePhone,
  overdueInvoice,
  planRequests,
  rankAndDedupe,
  requestBody,
  resolveSettings,
  targetFor,
  type CallSettings,
} from '../../src/calls/index.js';
import type { MirroredContact, MirroredInvoice } from '../../src/state/record-mirror.js';

const U1 = '11111111-1111-4111-8111-111111111111';
const U2 = '22222222-2222-4222-8222-222222222222';
const criteria = { overdueDays: 30, minAmount: 100, asOf: '2026-11-20' };
const ctx = { tenant: 'acme', campaignId: 'cmp-test', region: 'SA', remindersDisabled: new Set<string>() };

function invoice(over: Partial<MirroredInvoice> = {}): MirroredInvoice {
  return {
    id: 'I-1',
    contactId: 'C-1',
    updatedAt: '2026-11-01T00:00:00Z',
    status: 'AUTHORISED',
    deleted: false,
    number: 'INV-1',
    date: '2026-09-01',
    dueDate: '2026-10-01',
    total: 1000,
    outstandingAmount: 800,
    uuid: U2,
    ...over,
  };
}

function contact(over: Partial<MirroredContact> = {}): MirroredContact {
  return { id: 'C-1', name: 'Al Noor Trading', nameAr: 'النور للتجارة', firstName: 'Fahad', lastName: 'Al-Harbi', phoneNumber: '0501234567', deleted: false, uuid: U1, ...over };
}

describe('phone numbers', () => {
  it('reads local, international and Arabic-Indic forms as E.164 in the tenant region', () => {
    for (const raw of ['0501234567', '050-123-4567', '+966 50 123 4567', '00966501234567', '966501234567', '٠٥٠١٢٣٤٥٦٧']) {
      expect(normalisePhone(raw, 'SA'), raw).toEqual({ ok: true, e164: '+966501234567', region: 'SA' });
    }
    expect(normalisePhone('+1 212 555 0100', 'SA')).toMatchObject({ ok: true, e164: '+12125550100' });
  });
  it('refuses empty, short, unassigned and non-numbers with a reason', () => {
    expect(normalisePhone(undefined, 'SA')).toEqual({ ok: false, reason: 'no phone number' });
    expect(normalisePhone('12345', 'SA')).toMatchObject({ ok: false, reason: expect.stringContaining('not a valid number') as unknown });
    expect(normalisePhone('0521234567', 'SA')).toMatchObject({ ok: false });
    expect(normalisePhone('call me', 'SA')).toMatchObject({ ok: false, reason: expect.stringContaining('not a phone number') as unknown });
  });
});

describe('overdue selection', () => {
  it('counts days in UTC and applies every invoice rule', () => {
    expect(daysBetween('2026-10-01', '2026-11-20')).toBe(50);
    expect(overdueInvoice(invoice(), criteria, 'SAR')).toMatchObject({ outstanding: 800, daysOverdue: 50, currency: 'SAR', uuid: U2 });
    expect(overdueInvoice(invoice({ pushedOutstanding: 300 }), criteria, 'SAR')?.outstanding).toBe(300);
    expect(overdueInvoice(invoice({ outstandingAmount: undefined }), criteria, 'SAR')?.outstanding).toBe(1000);
    expect(overdueInvoice(invoice({ dueDate: '2026-10-22' }), criteria, 'SAR')).toBeUndefined(); // 29 days
    expect(overdueInvoice(invoice({ dueDate: '2026-10-21' }), criteria, 'SAR')?.daysOverdue).toBe(30);
    expect(overdueInvoice(invoice({ outstandingAmount: 99.99 }), criteria, 'SAR')).toBeUndefined();
    expect(overdueInvoice(invoice({ pushedOutstanding: 0 }), { ...criteria, minAmount: 0 }, 'SAR')).toBeUndefined();
    for (const status of ['DRAFT', 'PAID', 'VOIDED'] as const) expect(overdueInvoice(invoice({ status }), criteria, 'SAR'), status).toBeUndefined();
    expect(overdueInvoice(invoice({ deleted: true }), criteria, 'SAR')).toBeUndefined();
    expect(overdueInvoice(invoice({ uuid: undefined }), criteria, 'SAR')).toBeUndefined();
  });

  it('builds the target with string tags and metadata, or says why a contact is left out', () => {
    const dues = [
      overdueInvoice(invoice({ id: 'I-2', number: 'INV-2', dueDate: '2026-10-10', outstandingAmount: 11545.5, uuid: U1 }), criteria, 'SAR')!,
      overdueInvoice(invoice(), criteria, 'SAR')!,
    ];
    const v = targetFor('C-1', contact(), dues, ctx);
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.target.contact).toEqual({
      numberToCall: '+966501234567',
      firstName: 'Fahad',
      lastName: 'Al-Harbi',
      promptTags: {
        customerName: 'Al Noor Trading',
        customerNameAr: 'النور للتجارة',
        amountDue: '12,345.50 SAR',
        invoiceNumbers: 'INV-1, INV-2',
        invoiceCount: '2',
        oldestDueDate: '2026-10-01',
        daysOverdue: '50',
      },
      metadata: { tenant: 'acme', campaignId: 'cmp-test', contactUuid: U1, contactId: 'C-1', invoiceUuids: [U2, U1] },
    });
    const reason = (c: MirroredContact | undefined, extra: Partial<typeof ctx> = {}) => {
      const r = targetFor('C-1', c, dues, { ...ctx, ...extra });
      return r.ok ? 'called' : r.skip.reason;
    };
    expect(reason(undefined)).toBe('not-in-service');
    expect(reason(contact({ uuid: undefined }))).toBe('not-in-service');
    expect(reason(contact({ deleted: true }))).toBe('deleted');
    expect(reason(contact(), { remindersDisabled: new Set([U1]) })).toBe('reminders-disabled');
    expect(reason(contact({ phoneNumber: undefined }))).toBe('no-phone');
    expect(reason(contact({ phoneNumber: '0521234567' }))).toBe('invalid-phone');
  });

  it('keeps one contact per number: the oldest debt first', () => {
    const due = (dueDate: string) => [overdueInvoice(invoice({ dueDate }), criteria, 'SAR')!];
    const a = targetFor('C-A', contact({ id: 'C-A', name: 'A' }), due('2026-10-01'), ctx);
    const b = targetFor('C-B', contact({ id: 'C-B', name: 'B' }), due('2026-09-01'), ctx);
    const c = targetFor('C-C', contact({ id: 'C-C', name: 'C', phoneNumber: '0551234567' }), due('2026-10-15'), ctx);
    const found = [a, b, c].map((v) => (v.ok ? { target: v.target, invoices: v.invoices } : undefined)).filter((x) => x !== undefined);
    const { targets, skipped } = rankAndDedupe(found);
    expect(targets.map((t) => t.contactId)).toEqual(['C-B', 'C-C']);
    expect(skipped).toEqual([{ who: 'C-A', name: 'A', reason: 'duplicate-number', detail: expect.stringContaining('C-B') as unknown }]);
  });

  it('formats amounts in the currency\'s own decimals, several currencies joined', () => {
    expect(formatAmount(12345, 'SAR')).toBe('12,345.00 SAR');
    expect(formatAmount(1.5, 'KWD')).toBe('1.500 KWD');
    const base = { id: 'x', uuid: U1, number: 'n', dueDate: '2026-01-01', daysOverdue: 1 };
    expect(amountDue([{ ...base, outstanding: 100, currency: 'USD' }, { ...base, outstanding: 200, currency: 'SAR' }, { ...base, outstanding: 0.1, currency: 'SAR' }])).toBe('200.10 SAR + 100.00 USD');
  });
});

describe('settings and requests', () => {
  const tenantCalls = { defaultRegion: 'SA', requestSize: 2, updateExisting: false, aiSettingsTemplateId: U1 };
  it('lets a campaign override the tenant and names every bad setting', () => {
    const r = resolveSettings(tenantCalls, { aiSettingsTemplateId: U2, batchSize: 20 });
    expect(r).toEqual({ ok: true, settings: { defaultRegion: 'SA', requestSize: 2, updateExisting: false, aiSettingsTemplateId: U2, batchSize: 20, currency: 'SAR' } });
    const bad = resolveSettings(tenantCalls, { aiSettingsTemplateId: 'not-a-uuid', batchSize: 5, countryCode: 'sa' });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problems.map((p) => p.field).sort()).toEqual(['aiSettingsTemplateId', 'batchSize', 'countryCode']);
    expect(bad.problems.find((p) => p.field === 'aiSettingsTemplateId')?.message).toContain('not-a-uuid');
  });

  it('cuts targets into requests of requestSize and checks each body against the contract', () => {
    const settings = (resolveSettings(tenantCalls) as { settings: CallSettings }).settings;
    const targets = ['0501111111', '0502222222', '0503333333'].map((n) => {
      const e164 = (normalisePhone(n, 'SA') as { e164: string }).e164;
      return { number: e164, label: n, contact: { numberToCall: e164 } };
    });
    const planned = planRequests(targets, settings);
    expect(planned.map((p) => p.targets.length)).toEqual([2, 1]);
    expect(requestBody(planned[0]!.targets.map((t) => t.contact), settings)).toEqual({
      ok: true,
      body: { contacts: [{ numberToCall: '+966501111111' }, { numberToCall: '+966502222222' }], aiSettingsTemplateId: U1, updateExisting: false },
    });
    expect(requestBody([{ numberToCall: '' }], settings)).toMatchObject({ ok: false, problem: expect.stringContaining('contacts.0.numberToCall') as unknown });
  });
});
