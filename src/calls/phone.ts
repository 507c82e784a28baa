/**
 * Phone numbers for calls: any written form (local `05xxxxxxxx`, `+966 50 ...`, `00966...`, Arabic-Indic digits)
 * to E.164, through libphonenumber-js with its full ("max") metadata, so a number is valid only when its
 * region's numbering plan has it (an unassigned Saudi prefix such as 052 is refused, not dialled).
 */
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

export type PhoneCheck = { ok: true; e164: string; region: string | undefined } | { ok: false; reason: string };

/** `raw` as E.164, reading local forms in `region` (ISO 3166-1 alpha-2). Never throws. */
export function normalisePhone(raw: string | null | undefined, region: string): PhoneCheck {
  const text = (raw ?? '').trim();
  if (text === '') return { ok: false, reason: 'no phone number' };
  if (text.length > 64) return { ok: false, reason: 'phone number longer than 64 characters' };
  const parsed = parsePhoneNumberFromString(text, { defaultCountry: region as CountryCode, extract: false });
  if (!parsed) return { ok: false, reason: `not a phone number ("${text}")` };
  if (!parsed.isValid()) return { ok: false, reason: `not a valid number for ${parsed.country ?? region} ("${text}")` };
  return { ok: true, e164: parsed.number, region: parsed.country };
}
