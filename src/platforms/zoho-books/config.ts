/**
 * A zoho-books tenant's `platform` object in the tenants file (docs/zoho-books.md), and Zoho's data centres: each has
 * its own accounts server (OAuth) and API domain. A connection lives in one data centre, which Zoho names in the
 * connect callback (`location`, `accounts-server`) and in the token answer (`api_domain`); only these addresses (or,
 * with `accountsUrl` given, that URL's origin: a proxy, a test double) are ever sent a code, a secret or a token.
 */
import { z } from 'zod';
import { secretField } from '../../secret.js';
import { secretSafeUrl } from '../../urls.js';

export const ZOHO_DATA_CENTRES = ['com', 'eu', 'in', 'com.au', 'jp', 'ca', 'sa', 'uk', 'com.cn'] as const;
export type ZohoDataCentre = (typeof ZOHO_DATA_CENTRES)[number];

/** Zoho's published accounts servers (Canada's is on zohocloud.ca) and API domains, per data centre. */
export const ZOHO_ACCOUNTS: Record<ZohoDataCentre, string> = {
  com: 'https://accounts.zoho.com',
  eu: 'https://accounts.zoho.eu',
  in: 'https://accounts.zoho.in',
  'com.au': 'https://accounts.zoho.com.au',
  jp: 'https://accounts.zoho.jp',
  ca: 'https://accounts.zohocloud.ca',
  sa: 'https://accounts.zoho.sa',
  uk: 'https://accounts.zoho.uk',
  'com.cn': 'https://accounts.zoho.com.cn',
};
export const ZOHO_API_DOMAINS: Record<ZohoDataCentre, string> = {
  com: 'https://www.zohoapis.com',
  eu: 'https://www.zohoapis.eu',
  in: 'https://www.zohoapis.in',
  'com.au': 'https://www.zohoapis.com.au',
  jp: 'https://www.zohoapis.jp',
  ca: 'https://www.zohoapis.ca',
  sa: 'https://www.zohoapis.sa',
  uk: 'https://www.zohoapis.uk',
  'com.cn': 'https://www.zohoapis.com.cn',
};
/** The callback's `location` of each data centre (Zoho names the US one `us`). */
export const ZOHO_LOCATIONS: Record<ZohoDataCentre, string> = { com: 'us', eu: 'eu', in: 'in', 'com.au': 'au', jp: 'jp', ca: 'ca', sa: 'sa', uk: 'uk', 'com.cn': 'cn' };

/** Read scopes only, joined by Zoho's comma: contacts, invoices, customer payments, and settings (GET /organizations). */
export const ZOHO_BOOKS_SCOPES = ['ZohoBooks.contacts.READ', 'ZohoBooks.invoices.READ', 'ZohoBooks.customerpayments.READ', 'ZohoBooks.settings.READ'] as const;

export const zohoBooksConfig = z.strictObject({
  kind: z.literal('zoho-books'),
  clientId: z.string().min(1),
  clientSecret: secretField,
  /** The data centre the app is registered in: its accounts server starts a connect link (default `com`, the US). */
  dataCenter: z.enum(ZOHO_DATA_CENTRES).default('com'),
  /** The organization (Zoho's organization_id, digits); optional: a connect link binds it (and refuses another when given). */
  organizationId: z.string().regex(/^[0-9]{1,32}$/, "Zoho Books' organization_id: digits only").optional(),
  /** Optional: without it the tenant waits for a connect link; given, it seeds the token chain (with organizationId). */
  refreshToken: secretField.optional(),
  /** Overrides the main accounts server (a proxy, a test double): only its origin is then trusted as a data centre. */
  accountsUrl: secretSafeUrl.optional(),
});
export type ZohoBooksConfig = z.infer<typeof zohoBooksConfig>;

/** Where a URL points, for trust: its origin and its path without a trailing slash; undefined when it is no plain URL. */
function plain(url: string): { origin: string; path: string } | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '') return undefined;
  return { origin: u.origin, path: u.pathname.replace(/\/+$/, '') };
}

/** The main accounts server: the config's override, else its data centre's. */
export function mainAccounts(config: ZohoBooksConfig): string {
  return (config.accountsUrl ?? ZOHO_ACCOUNTS[config.dataCenter]).replace(/\/+$/, '');
}

/**
 * A server Zoho named (the callback's `accounts-server`, the token answer's `api_domain`) if it is to be trusted, as
 * written without a trailing slash; undefined otherwise. With `accountsUrl` given, only that URL's origin is trusted
 * (any path: a double serves its data centres side by side); without it, exactly one of Zoho's own addresses, of
 * `dataCentre` when given (an API domain must be the one of its accounts server's data centre).
 */
export function trusted(config: ZohoBooksConfig, url: string, kind: 'accounts' | 'api', dataCentre?: ZohoDataCentre): { url: string; dataCentre?: ZohoDataCentre } | undefined {
  const p = plain(url);
  if (p === undefined) return undefined;
  if (config.accountsUrl !== undefined) return p.origin === new URL(config.accountsUrl).origin ? { url: p.origin + p.path } : undefined;
  if (p.path !== '') return undefined;
  const table = kind === 'accounts' ? ZOHO_ACCOUNTS : ZOHO_API_DOMAINS;
  const dc = ZOHO_DATA_CENTRES.find((d) => table[d] === p.origin);
  if (dc === undefined || (dataCentre !== undefined && dc !== dataCentre)) return undefined;
  return { url: p.origin, dataCentre: dc };
}

/** The data centre of a trusted Zoho accounts server (undefined with an override: a proxy's is not known). */
export function dataCentreOf(config: ZohoBooksConfig, accounts: string): ZohoDataCentre | undefined {
  return trusted(config, accounts, 'accounts')?.dataCentre;
}

/** The API domain to use when none was kept: the data centre's, or with an override the override itself (a double serves both). */
export function defaultApiDomain(config: ZohoBooksConfig, accounts: string): string {
  if (config.accountsUrl !== undefined) return accounts;
  return ZOHO_API_DOMAINS[dataCentreOf(config, accounts) ?? config.dataCenter];
}
