import { describe, expect, it } from 'vitest';
import { contactCreateSchema } from '../../src/collections/schemas.js';
import { mapContact, type ContactMapperResult } from '../../src/mapping/index.js';
import { contactRecordSchema, type ContactRecord } from '../../src/platforms/records.js';

const rec = (over: Record<string, unknown> = {}): ContactRecord =>
  contactRecordSchema.parse({ id: 'C-1', updatedAt: '2026-01-01T00:00:00Z', name: 'Acme Trading', ...over });

function ok(m: ContactMapperResult): Extract<ContactMapperResult, { kind: 'push' }> {
  if (m.kind !== 'push') throw new Error(`expected push, got: ${m.reason}`);
  return m;
}

describe('mapContact', () => {
  it('maps ids, names, Arabic fields, address and bank fields, and sends what the service schema accepts', () => {
    const arabic = {
      nameAr: 'شركة أكمي للتجارة',
      firstNameAr: 'محمد',
      lastNameAr: 'العتيبي',
      buildingAr: 'مبنى ٧',
      streetAr: 'شارع الملك فهد',
      districtAr: 'العليا',
      cityAr: 'الرياض',
      countryAr: 'المملكة العربية السعودية',
    };
    const m = ok(mapContact(rec({
      companyId: 'ORG-9',
      firstName: 'Mohammed',
      lastName: 'Alotaibi',
      email: 'ap@acme.example',
      phoneNumber: '+966501234567',
      vatNumber: '300000000000003',
      building: '7', street: 'King Fahd Rd', district: 'Olaya', city: 'Riyadh', country: 'SA', postalCode: '12211',
      additionalNumber: '1234', otherId: 'CR-1',
      bankName: 'SNB', bankContactName: 'Ops', iban: 'SA0380000000608010167519', accountNumber: '608010167519',
      ...arabic,
    })));
    expect(m.dropped).toEqual([]);
    expect(m.body).toMatchObject({
      name: 'Acme Trading', extPlatformId: 'C-1', extCompanyId: 'ORG-9', email: 'ap@acme.example', phoneNumber: '+966501234567',
      vatNumber: '300000000000003', city: 'Riyadh', iban: 'SA0380000000608010167519', accountNumber: '608010167519',
      remindersEnabled: true, hasErrors: false, ...arabic,
    });
    expect(m.body).not.toHaveProperty('errorDetail');
    expect(m.body).not.toHaveProperty('role');
    expect(m.body).not.toHaveProperty('uuid');
    expect(m.body).not.toHaveProperty('secondaryContacts');
    expect(contactCreateSchema.safeParse(m.body).success).toBe(true);
  });

  it('drops a bad optional field, lists it, and flags the contact with hasErrors and errorDetail', () => {
    const m = ok(mapContact(rec({ email: 'not-an-email', city: 'c'.repeat(256), street: '  Main St  ', iban: 'SA03' })));
    expect(m.body).not.toHaveProperty('email');
    expect(m.body).not.toHaveProperty('city');
    expect(m.body.street).toBe('Main St');
    expect(m.body.iban).toBe('SA03');
    expect(m.dropped).toEqual([
      { field: 'city', reason: '256 characters, the limit is 255' },
      { field: 'email', reason: 'not a valid email address' },
    ]);
    expect(m.body.hasErrors).toBe(true);
    expect(m.body.errorDetail).toEqual({
      source: 'collections-sync',
      dropped: { city: '256 characters, the limit is 255', email: 'not a valid email address' },
    });
  });

  it('treats empty and all-space strings as absent, not as errors', () => {
    const m = ok(mapContact(rec({ email: '', nameAr: '   ', companyId: '', phoneNumber: '' })));
    expect(m.dropped).toEqual([]);
    expect(m.body.hasErrors).toBe(false);
    for (const f of ['email', 'nameAr', 'extCompanyId', 'phoneNumber']) expect(m.body).not.toHaveProperty(f);
  });

  it('checks the 255 limit after trimming, counting Arabic characters not bytes', () => {
    const m = ok(mapContact(rec({ nameAr: `  ${'ع'.repeat(255)}  `, cityAr: 'ج'.repeat(256) })));
    expect(m.body.nameAr).toBe('ع'.repeat(255));
    expect(m.dropped.map((d) => d.field)).toEqual(['cityAr']);
  });

  it('keeps a deleted contact with reminders off, and re-enables a restored one', () => {
    expect(ok(mapContact(rec({ deleted: true }))).body.remindersEnabled).toBe(false);
    expect(ok(mapContact(rec({ deleted: false }))).body.remindersEnabled).toBe(true);
    expect(ok(mapContact(rec())).body.remindersEnabled).toBe(true);
  });

  it('refuses a contact whose name is unusable', () => {
    const blank = { ...rec(), name: '   ' };
    expect(mapContact(blank)).toEqual({ kind: 'reject', reason: 'name: required' });
    const long = { ...rec(), name: ` ${'n'.repeat(256)} ` };
    expect(mapContact(long)).toEqual({ kind: 'reject', reason: 'name: 256 characters, the limit is 255' });
    // Spaces around a name of exactly 255 are trimmed away, and it passes.
    expect(ok(mapContact({ ...rec(), name: ` ${'n'.repeat(255)} ` })).body.name).toHaveLength(255);
  });

  it('maps persons to secondary contacts, dropping bad fields and persons with no usable name', () => {
    const m = ok(mapContact(rec({
      persons: [
        { id: 'P-1', name: 'Sara Ali', email: 'sara@acme.example', phoneNumber: '0501234567' },
        { id: 'P-2', firstName: 'Omar', lastName: 'Haddad', email: 'omar(at)acme' },
        { id: 'P-3', email: 'nobody@acme.example' },
        { firstName: 'نورة', name: 'x'.repeat(300) },
      ],
    })));
    expect(m.body.secondaryContacts).toEqual([
      { name: 'Sara Ali', email: 'sara@acme.example', phoneNumber: '0501234567', extPlatformId: 'P-1' },
      { name: 'Omar Haddad', firstName: 'Omar', lastName: 'Haddad', extPlatformId: 'P-2' },
      { name: 'نورة', firstName: 'نورة' },
    ]);
    expect(m.dropped.map((d) => d.field)).toEqual(['persons[1].email', 'persons[2]', 'persons[3].name']);
    expect(m.dropped.map((d) => d.reason)).toEqual(['not a valid email address', m.dropped[1]!.reason, '300 characters, the limit is 255']);
    expect(m.dropped[1]!.reason).toMatch(/^no usable name/);
    expect(m.body.hasErrors).toBe(true);
    expect(Object.keys((m.body.errorDetail as { dropped: object }).dropped)).toEqual(['persons[1].email', 'persons[2]', 'persons[3].name']);
    expect(contactCreateSchema.safeParse(m.body).success).toBe(true);
  });

  it('sends an empty persons list as [] (the platform removed them) and leaves absent persons out', () => {
    expect(ok(mapContact(rec({ persons: [] }))).body.secondaryContacts).toEqual([]);
    expect(ok(mapContact(rec())).body).not.toHaveProperty('secondaryContacts');
  });
});
