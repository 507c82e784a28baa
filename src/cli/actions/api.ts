/** `api openapi`: what runs (the command is in ../commands/api.ts). No configuration, no Redis. */
import { openApiDocument } from '../../api/index.js';
import { outJson } from '../runtime.js';

export async function openapi(): Promise<void> {
  outJson(openApiDocument(), 2);
}
