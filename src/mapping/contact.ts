/**
 * Contact record -> the body of a contact POST (and, with `uuid` added by the caller, a PUT).
 *
 * Decisions (docs/decisions):
 * - A bad optional field (over 255 characters after trimming, or an email the service would refuse) is left out
 *   and listed in `dropped`; the contact is still pushed. Values sent are trimmed; an empty string is absent.
 * - `hasErrors` is always sent: `true` with `errorDetail: { source: 'collections-sync', dropped: { field: reason } }`
 *   when something was dropped, `false` without `errorDetail` otherwise, so a record fixed on the platform clears
 *   the flag on its next push. (The service does not show `errorDetail`'s content; this shape is ours.)
 * - `remindersEnabled` is always sent: `false` for a deleted contact (the service has no delete: stop collecting),
 *   `true` otherwise, so a contact restored on the platform is re-enabled.
 * - `role` is not sent (the service defaults to PRIMARY).
 * - `persons` become `secondaryContacts`; an empty `persons` array is sent as `[]`, an absent one is not sent.
 * - An update (`contactUpdateBody`) sends every optional field this mapper knows: `null` for one the record lacks
 *   (the service answers unset fields as null), so a phone or email removed on the platform is cleared in the
 *   service; `secondaryContacts` as `[]` when the record has no persons, each with nulls for its absent fields.
 *   The platform is the source of truth for these fields; fields the mapper never sends (workflow, notification
 *   settings, custom fields, ...) are never touched.
 */
import {
  CLEARABLE_CONTACT_FIELDS,
  CONTACT_STRING_FIELDS,
  contactCreateSchema,
  type ContactCreate,
  type ContactUpdate,
  type SecondaryContact,
} from '../collections/schemas.js';
import { markChecked, quickChecked } from '../collections/checked.js';
import { describeIssues, type ContactRecord, type Person } from '../platforms/records.js';
import { checkEmail, checkString, takeOptional, withNulls, type DroppedField } from './fields.js';
import { reportedIssues } from '../zod-issues.js';
import type { MapperPush, MapperReject } from './result.js';

/** A contact is pushed (maybe with fields dropped) or rejected; never skipped (a deleted one stops reminders). */
export type ContactMapperResult = MapperPush<ContactCreate> | MapperReject;

/** The `errorDetail` we send with `hasErrors: true`. */
export interface SyncErrorDetail {
  source: 'collections-sync';
  dropped: Record<string, string>;
  [key: string]: unknown;
}

/** Optional 1-255 string fields copied under the same name. */
const OPTIONAL_STRINGS = CONTACT_STRING_FIELDS.filter((f) => f !== 'name');

export function mapContact(rec: ContactRecord): ContactMapperResult {
  const built = buildContactBody(rec);
  return built.kind === 'push' ? checkContactBody(built.body, built.dropped) : built;
}

/**
 * What `mapContact` does before its check against the request schema: the body built, not checked yet (a
 * decision checks only a body it sends: `checkContactBody`).
 */
export function buildContactBody(rec: ContactRecord): MapperPush<Record<string, unknown>> | MapperReject {
  const name = checkString(rec.name);
  if (name.kind !== 'ok') return { kind: 'reject', reason: `name: ${name.kind === 'bad' ? name.reason : 'required'}` };

  const dropped: DroppedField[] = [];
  const body: Record<string, unknown> = { name: name.value, extPlatformId: rec.id };
  if (rec.companyId !== undefined && rec.companyId.trim() !== '') body['extCompanyId'] = rec.companyId;
  for (const field of OPTIONAL_STRINGS) takeOptional(body, field, checkString(rec[field]), field, dropped);
  takeOptional(body, 'email', checkEmail(rec.email), 'email', dropped);

  if (rec.persons !== undefined) {
    const secondary: SecondaryContact[] = [];
    rec.persons.forEach((person, i) => {
      const mapped = mapPerson(person, `persons[${i}]`, dropped);
      if (mapped !== undefined) secondary.push(mapped);
    });
    body['secondaryContacts'] = secondary;
  }

  body['remindersEnabled'] = !rec.deleted;
  body['hasErrors'] = dropped.length > 0;
  if (dropped.length > 0) body['errorDetail'] = errorDetailOf(dropped);

  return { kind: 'push', body, dropped };
}

/**
 * A safety net: what we send must pass the service's own request schema. The body that passes is frozen and
 * marked checked, so the client sends a create without checking it again (checked.ts).
 */
export function checkContactBody(body: Record<string, unknown>, dropped: DroppedField[]): ContactMapperResult {
  const quick = quickChecked(contactCreateSchema, body);
  if (quick !== undefined) return { kind: 'push', body: quick, dropped };
  const parsed = contactCreateSchema.safeParse(body);
  if (!parsed.success) return { kind: 'reject', reason: describeIssues(reportedIssues(contactCreateSchema, body)) };
  return { kind: 'push', body: markChecked(contactCreateSchema, parsed.data), dropped };
}

/** The optional fields of a person (secondary contact) the mapper fills; an update clears the absent ones. */
const PERSON_FIELDS = ['firstName', 'lastName', 'email', 'phoneNumber'] as const;

/** The PUT body of a contact from its mapped POST body (see the decisions above): no role, nulls, the uuid. */
export function contactUpdateBody(body: ContactCreate, uuid: string): ContactUpdate {
  const { role: _role, secondaryContacts, ...rest } = body;
  return {
    ...withNulls<ContactUpdate>({ ...rest, uuid }, CLEARABLE_CONTACT_FIELDS),
    secondaryContacts: (secondaryContacts ?? []).map((s) => withNulls(s, PERSON_FIELDS)),
  };
}

export function errorDetailOf(dropped: readonly DroppedField[]): SyncErrorDetail {
  return { source: 'collections-sync', dropped: Object.fromEntries(dropped.map((d) => [d.field, d.reason])) };
}

/** One person -> a secondary contact; undefined (and a dropped entry) when no usable name is left. */
function mapPerson(person: Person, path: string, dropped: DroppedField[]): SecondaryContact | undefined {
  const out: Record<string, unknown> = {};
  const first = checkString(person.firstName);
  const last = checkString(person.lastName);
  takeOptional(out, 'firstName', first, `${path}.firstName`, dropped);
  takeOptional(out, 'lastName', last, `${path}.lastName`, dropped);
  takeOptional(out, 'email', checkEmail(person.email), `${path}.email`, dropped);
  takeOptional(out, 'phoneNumber', checkString(person.phoneNumber), `${path}.phoneNumber`, dropped);

  let name = checkString(person.name);
  if (name.kind === 'bad') dropped.push({ field: `${path}.name`, reason: name.reason });
  if (name.kind !== 'ok') {
    const parts = [first, last].flatMap((c) => (c.kind === 'ok' ? [c.value] : []));
    name = checkString(parts.join(' '));
  }
  if (name.kind !== 'ok') {
    dropped.push({ field: path, reason: 'no usable name (name, firstName and lastName are empty or invalid)' });
    return undefined;
  }
  out['name'] = name.value;
  if (person.id !== undefined) out['extPlatformId'] = person.id;
  return out;
}
