/** The CLI's one escaping function for human-readable output (issue 17). */
import { describe, expect, it } from 'vitest';
import { printable } from '../../src/cli/runtime.js';

describe('printable', () => {
  it('shows every C0 control but tab and newline, DEL and every C1 control as \\xNN', () => {
    expect(printable('id-\u001b[2J-x')).toBe('id-\\x1b[2J-x');
    expect(printable('a\rb\u0007c\u0000d\u0008e\u000bf\u000cg\u007fh')).toBe('a\\x0db\\x07c\\x00d\\x08e\\x0bf\\x0cg\\x7fh');
    expect(printable('\u009b2J \u0080 \u009f \u0085')).toBe('\\x9b2J \\x80 \\x9f \\x85');
    for (let c = 0; c <= 0x9f; c += 1) {
      const ch = String.fromCharCode(c);
      const control = c < 0x20 || (c >= 0x7f && c <= 0x9f);
      const kept = !control || ch === '\t' || ch === '\n';
      expect(printable(ch), `0x${c.toString(16)}`).toBe(kept ? ch : `\\x${c.toString(16).padStart(2, '0')}`);
    }
  });

  it('keeps text: tabs, newlines, Arabic names, accents and emoji', () => {
    const text = 'شركة الرياض للتجارة\tCafé Zoë 🙂\nnext line ½ ÿ \u00a0';
    expect(printable(text)).toBe(text);
  });
});
