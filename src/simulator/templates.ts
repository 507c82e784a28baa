/**
 * AI settings templates (their fields are not shown in the description: the simulator keeps a uuid and a system
 * prompt) and `{{key}}` substitution from a contact's promptTags.
 */
export interface Template {
  uuid: string;
  prompt: string;
}

export const DEFAULT_TEMPLATE: Template = {
  uuid: '00000000-0000-4000-8000-000000000001',
  prompt:
    'You are a polite collections assistant calling {{customerName}} about {{amountDue}} owed on invoices ' +
    '{{invoiceNumbers}}, {{daysOverdue}} days overdue. Ask when the payment will be made.',
};

/** Replaces each `{{key}}` with tags[key]; placeholders without a tag are left as they are. */
export function substitute(prompt: string, tags: Record<string, string> | null | undefined): string {
  if (!tags) return prompt;
  return prompt.replace(/\{\{\s*([^{}]+?)\s*\}\}/g, (whole, key: string) =>
    Object.prototype.hasOwnProperty.call(tags, key) ? (tags[key] ?? whole) : whole,
  );
}

export class Templates {
  readonly #byUuid = new Map<string, Template>([[DEFAULT_TEMPLATE.uuid, DEFAULT_TEMPLATE]]);

  add(t: Template): void {
    this.#byUuid.set(t.uuid.toLowerCase(), { ...t });
  }

  /** The template of `uuid`, or the default one when `uuid` is null/undefined; undefined when unknown. */
  get(uuid: string | null | undefined): Template | undefined {
    return this.#byUuid.get((uuid ?? DEFAULT_TEMPLATE.uuid).toLowerCase());
  }
}
