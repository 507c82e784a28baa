/** The token endpoint's answers, as every OAuth 2.0 platform here gives them (RFC 6749 sections 5.1 and 5.2). */
import { z } from 'zod';

export const tokenResponseSchema = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1),
  expires_in: z.coerce.number().int().positive(),
  token_type: z.string().optional(),
});

export const tokenErrorSchema = z.looseObject({ error: z.string(), error_description: z.string().optional() });
