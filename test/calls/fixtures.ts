/**
 * A small tenant with overdue invoices, for call tests: which contacts a 30-day, 100-minimum campaign as of
 * 2026-11-20 calls, and why it leaves the others out.
 */
import type { Simulator } from '../../src/simulator/index.js';

export const AS_OF = '2026-11-20';
export const NUMBERS = { noor: '+966501234567', gulf: '+966551234567', single: '+966561112233' } as const;
const updatedAt = '2026-11-01T00:00:00Z';

export const CONTACTS = [
  { id: 'C-01', updatedAt, name: 'Al Noor Trading', nameAr: 'النور للتجارة', firstName: 'Fahad', lastName: 'Al-Harbi', phoneNumber: '050 123 4567' },
  { id: 'C-02', updatedAt, name: 'Gulf Date Farms', phoneNumber: '+966551234567' },
  { id: 'C-03', updatedAt, name: 'Short Number Co', phoneNumber: '12345' },
  { id: 'C-04', updatedAt, name: 'No Phone Est' },
  { id: 'C-05', updatedAt, name: 'Closed Shop', phoneNumber: '0577777777', deleted: true },
  { id: 'C-06', updatedAt, name: 'Disputed Ltd', phoneNumber: '0588888888' },
  { id: 'C-07', updatedAt, name: 'Noor Branch', phoneNumber: '+966 50 123 4567' },
  { id: 'C-08', updatedAt, name: 'Paid Up Co', phoneNumber: '0591111111' },
  { id: 'C-09', updatedAt, name: 'Small Debt Co', phoneNumber: '0592222222' },
  { id: 'C-10', updatedAt, name: 'Recent Debt Co', phoneNumber: '0593333333' },
  { id: 'C-11', updatedAt, name: 'Unassigned Prefix Co', phoneNumber: '0521234567' },
  { id: 'C-12', updatedAt, name: 'Single Call Co', phoneNumber: '0561112233' },
];

const inv = (id: string, contactId: string, dueDate: string, outstandingAmount: number, extra: Record<string, unknown> = {}) => ({
  id,
  contactId,
  updatedAt,
  status: 'AUTHORISED',
  number: `INV-${id}`,
  date: '2026-08-01',
  dueDate,
  total: Math.max(outstandingAmount, 1) * 2,
  outstandingAmount,
  currencyCode: 'SAR',
  ...extra,
});

export const INVOICES = [
  inv('101', 'C-01', '2026-10-06', 10000.5), // 45 days
  inv('102', 'C-01', '2026-10-16', 2345), // 35 days
  inv('103', 'C-01', '2026-11-10', 999), // 10 days: not yet
  inv('201', 'C-02', '2026-09-21', 500, { currencyCode: 'USD' }), // 60 days
  inv('301', 'C-03', '2026-09-01', 700),
  inv('401', 'C-04', '2026-09-01', 700),
  inv('501', 'C-05', '2026-09-01', 700),
  inv('601', 'C-06', '2026-09-01', 700),
  inv('701', 'C-07', '2026-10-19', 300), // same number as C-01, less overdue
  inv('801', 'C-08', '2026-09-01', 0, { status: 'PAID' }),
  inv('802', 'C-08', '2026-09-01', 400, { status: 'VOIDED' }),
  inv('901', 'C-09', '2026-09-01', 50), // below the minimum
  inv('1001', 'C-10', '2026-11-01', 900), // 19 days
  inv('1101', 'C-11', '2026-09-01', 700),
];

/** Why each contact is left out of the campaign (contacts without a counting invoice are not listed). */
export const SKIPPED = {
  'C-03': 'invalid-phone',
  'C-04': 'no-phone',
  'C-05': 'deleted',
  'C-06': 'reminders-disabled',
  'C-07': 'duplicate-number',
  'C-11': 'invalid-phone',
};

export const CALL_ROUTES = ['POST /ai/phone-calls/action/call-bulk', 'POST /ai/phone-calls/action/call'] as const;

/** Call requests the simulator received (any answer, faults included). */
export function callRequests(sim: Simulator): number {
  const req = sim.counters().requests;
  return CALL_ROUTES.reduce((n, route) => n + Object.values(req[route] ?? {}).reduce((a, b) => a + b, 0), 0);
}
