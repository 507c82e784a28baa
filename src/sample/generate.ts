/**
 * Deterministic sample data: Saudi B2B customers (Arabic and English names), their invoices and payments,
 * as canonical records. Used by the demo, the tests and the benchmark; the same seed gives the same records.
 */
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../platforms/records.js';

const COMPANIES: [string, string][] = [
  ['Al Noor Trading', 'النور للتجارة'],
  ['Riyadh Steel Works', 'مصانع الرياض للحديد'],
  ['Gulf Date Farms', 'مزارع الخليج للتمور'],
  ['Najd Logistics', 'نجد للخدمات اللوجستية'],
  ['Red Sea Foods', 'أغذية البحر الأحمر'],
  ['Hijaz Contracting', 'الحجاز للمقاولات'],
  ['Eastern Petro Services', 'الشرقية لخدمات البترول'],
  ['Qassim Agri Supply', 'القصيم للتوريدات الزراعية'],
  ['Asir Building Materials', 'عسير لمواد البناء'],
  ['Tabuk Medical Supplies', 'تبوك للمستلزمات الطبية'],
  ['Makkah Hospitality', 'مكة للضيافة'],
  ['Dammam Electric', 'الدمام للكهرباء'],
];
const FIRST: [string, string][] = [
  ['Mohammed', 'محمد'], ['Abdullah', 'عبدالله'], ['Fahad', 'فهد'], ['Sara', 'سارة'], ['Noura', 'نورة'],
  ['Khalid', 'خالد'], ['Faisal', 'فيصل'], ['Reem', 'ريم'], ['Saad', 'سعد'], ['Huda', 'هدى'],
];
const LAST: [string, string][] = [
  ['Al-Qahtani', 'القحطاني'], ['Al-Otaibi', 'العتيبي'], ['Al-Shehri', 'الشهري'], ['Al-Ghamdi', 'الغامدي'],
  ['Al-Harbi', 'الحربي'], ['Al-Dosari', 'الدوسري'], ['Al-Zahrani', 'الزهراني'], ['Al-Mutairi', 'المطيري'],
];
const CITIES: [string, string][] = [
  ['Riyadh', 'الرياض'], ['Jeddah', 'جدة'], ['Dammam', 'الدمام'], ['Mecca', 'مكة المكرمة'], ['Medina', 'المدينة المنورة'], ['Khobar', 'الخبر'],
];

/** mulberry32: a small seeded PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SampleOptions {
  contacts: number;
  seed?: number;
  /** Day the data is "exported" (invoice dates fall in the 120 days before). */
  today?: Date;
  /** Id prefix, so several tenants get distinct ids. */
  idPrefix?: string;
  /** Base of updatedAt stamps. */
  updatedAt?: Date;
}

export interface SampleData {
  contacts: ContactRecord[];
  invoices: InvoiceRecord[];
  payments: PaymentRecord[];
}

const pick = <T>(rand: () => number, list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;
const isoDay = (d: Date): string => d.toISOString().slice(0, 10);

/** Generates records lazily, contact by contact (flat memory for large benchmark data sets). */
export function* generateSample(options: SampleOptions): Generator<{ contact: ContactRecord; invoices: InvoiceRecord[]; payments: PaymentRecord[] }> {
  const rand = prng(options.seed ?? 42);
  const today = options.today ?? new Date();
  const base = (options.updatedAt ?? new Date(today.getTime() - 86_400_000)).getTime();
  const p = options.idPrefix ?? '';
  for (let i = 1; i <= options.contacts; i += 1) {
    const [company, companyAr] = pick(rand, COMPANIES);
    const [first, firstAr] = pick(rand, FIRST);
    const [last, lastAr] = pick(rand, LAST);
    const [city, cityAr] = pick(rand, CITIES);
    const id = `${p}C${String(i).padStart(6, '0')}`;
    const phone = `05${String(Math.floor(rand() * 1e8)).padStart(8, '0')}`;
    const contact: ContactRecord = {
      id,
      companyId: `${p}ORG1`,
      updatedAt: new Date(base + i * 1000).toISOString(),
      deleted: false,
      name: `${company} ${i}`,
      nameAr: `${companyAr} ${i}`,
      firstName: first,
      firstNameAr: firstAr,
      lastName: last,
      lastNameAr: lastAr,
      email: `ap${i}@${company.toLowerCase().replace(/[^a-z]+/g, '')}.example.sa`,
      phoneNumber: rand() < 0.5 ? phone : `+966${phone.slice(1)}`,
      vatNumber: `3${String(Math.floor(rand() * 1e13)).padStart(13, '0')}3`,
      city,
      cityAr,
      country: 'Saudi Arabia',
      countryAr: 'المملكة العربية السعودية',
      postalCode: String(10000 + Math.floor(rand() * 89999)),
    };
    if (rand() < 0.3) contact.persons = [{ id: `${id}-P1`, name: `${pick(rand, FIRST)[0]} ${pick(rand, LAST)[0]}`, phoneNumber: `05${String(Math.floor(rand() * 1e8)).padStart(8, '0')}` }];
    const invoices: InvoiceRecord[] = [];
    const payments: PaymentRecord[] = [];
    const count = 1 + Math.floor(rand() * 4);
    for (let k = 1; k <= count; k += 1) {
      const invId = `${id}-I${k}`;
      const date = new Date(today.getTime() - Math.floor(rand() * 120) * 86_400_000);
      const due = new Date(date.getTime() + 30 * 86_400_000);
      const total = Math.round((500 + rand() * 50_000) * 100) / 100;
      const r = rand();
      const status: InvoiceRecord['status'] = r < 0.08 ? 'DRAFT' : r < 0.12 ? 'VOIDED' : r < 0.3 ? 'PAID' : 'AUTHORISED';
      const paid = status === 'PAID' ? total : status === 'AUTHORISED' && rand() < 0.35 ? Math.round(total * 0.4 * 100) / 100 : 0;
      invoices.push({
        id: invId,
        contactId: id,
        updatedAt: new Date(base + i * 1000 + k).toISOString(),
        status,
        deleted: false,
        number: `INV-${p}${String(i).padStart(6, '0')}-${k}`,
        date: isoDay(date),
        dueDate: isoDay(due),
        total,
        outstandingAmount: Math.round((total - paid) * 100) / 100,
        currencyCode: 'SAR',
        reference: `PO-${Math.floor(rand() * 99999)}`,
      });
      if (paid > 0) {
        payments.push({
          id: `${invId}-P1`,
          invoiceId: invId,
          updatedAt: new Date(base + i * 1000 + k + 100).toISOString(),
          amount: paid,
          date: isoDay(new Date(date.getTime() + 10 * 86_400_000)),
          reference: `TRX-${Math.floor(rand() * 999999)}`,
          deleted: false,
        });
      }
    }
    yield { contact, invoices, payments };
  }
}

/** The whole sample in memory (small data sets only). */
export function sampleData(options: SampleOptions): SampleData {
  const out: SampleData = { contacts: [], invoices: [], payments: [] };
  for (const g of generateSample(options)) {
    out.contacts.push(g.contact);
    out.invoices.push(...g.invoices);
    out.payments.push(...g.payments);
  }
  return out;
}
