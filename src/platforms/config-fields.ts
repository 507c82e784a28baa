/** Pieces of platform configs that several platforms' schemas share (each platform's schema is in its folder). */
import { z } from 'zod';

/** Scopes asked for by a connect link (docs/connecting.md): a space-separated list, or a list of strings. */
export const scopesField = (def: readonly string[]) =>
  z
    .union([z.string().min(1), z.array(z.string().regex(/^\S+$/, 'one scope, no spaces')).min(1)])
    .transform((v) => (typeof v === 'string' ? v.trim().split(/\s+/) : v))
    .default([...def]);
