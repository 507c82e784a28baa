/**
 * The README and docs/ stay true to the code: the glossary (src/glossary.ts) and docs/glossary.md list the same words
 * with the same meanings; the project layout (docs/development.md) names folders that exist and every top-level folder of src/
 * and jobs/; the README's own links to files and headings resolve; user text carries no decision numbers.
 * Reads files only: no Redis, no processes.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GLOSSARY } from '../../src/glossary.js';
import { PLATFORM_KINDS } from '../../src/platforms/registry.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The lines of a markdown section, from its heading to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^#+ /.test(l) && l.replace(/^#+ /, '').trim() === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The body rows of the first table in some lines, as cells. */
function tableRows(lines: string[]): string[][] {
  const rows = lines.filter((l) => l.startsWith('|'));
  return rows.slice(2).map((r) =>
    r
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim()),
  );
}

/** Directories directly under a folder of the repository. */
const subfolders = (folder: string): string[] =>
  readdirSync(join(ROOT, folder), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);

describe('docs/glossary.md and src/glossary.ts', () => {
  it('list the same words with the same meanings, in the same order', () => {
    const rows = tableRows(section(read('docs/glossary.md'), 'Glossary')).map(([word, meaning]) => ({ word, meaning }));
    expect(rows).toEqual(GLOSSARY.map((g) => ({ word: g.word, meaning: g.meaning })));
  });

  it('name every platform kind the tenants file accepts, and no document outside the repository', () => {
    const kinds = [...PLATFORM_KINDS];
    expect(kinds).toEqual(expect.arrayContaining(['file', 'xero', 'quickbooks', 'zoho-books']));
    const platform = GLOSSARY.find((g) => g.word === 'platform')!.meaning;
    for (const kind of kinds) expect(platform).toContain(`\`${kind}\``);
    for (const g of GLOSSARY) for (const doc of g.meaning.match(/[\w./-]+\.md\b/g) ?? []) expect(existsSync(join(ROOT, doc)), doc).toBe(true);
  });
});

describe('the project layout (docs/development.md)', () => {
  const rows = tableRows(section(read('docs/development.md'), 'Project layout'));
  const named = rows.flatMap(([folders]) => [...(folders ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\/$/, '')));

  it('names only folders that exist', () => {
    expect(named.length).toBeGreaterThan(10);
    for (const folder of named) expect(existsSync(join(ROOT, folder)) && statSync(join(ROOT, folder)).isDirectory(), folder).toBe(true);
  });

  it('names every top-level folder of src/ and jobs/ (their subfolders need not be listed)', () => {
    const top = [...subfolders('src').map((d) => `src/${d}`), ...subfolders('jobs').map((d) => `jobs/${d}`)];
    expect(top.filter((folder) => !named.includes(folder))).toEqual([]);
  });
});

describe('README', () => {
  const readme = read('README.md');

  it('stays short enough to read', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(500);
  });

  it('links only to files that exist and to headings it has (and so do the docs it links to)', () => {
    const slug = (h: string): string =>
      h
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-');
    const check = (path: string): void => {
      const text = read(path);
      const anchors = new Set(text.split('\n').filter((l) => /^#+ /.test(l)).map((l) => slug(l.replace(/^#+ /, '').trim())));
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#');
        if (file) expect(existsSync(join(ROOT, dirname(path), file)), `${path} links to ${target}`).toBe(true);
        else expect(anchors.has(anchor!), `${path} links to #${anchor}`).toBe(true);
      }
    };
    for (const path of ['README.md', 'bench/README.md', 'bench/HISTORY.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'docs/decisions/README.md'])
      check(path);
  });

  it('names no decision or issue by number in text for users', () => {
    expect(readme.match(/\b(decision|issue)s? \d+/gi) ?? []).toEqual([]);
  });
});

describe('docs/decisions', () => {
  it('has one file per number, each with its sections, and an index line for each', () => {
    const folder = join(ROOT, 'docs/decisions');
    const index = read('docs/decisions/README.md');
    const files = readdirSync(folder).filter((f) => /^\d{4}-.+\.md$/.test(f));
    expect(new Set(files.map((f) => f.slice(0, 4))).size).toBe(files.length);
    for (const f of files) {
      const text = readFileSync(join(folder, f), 'utf8');
      for (const part of ['## Context', '## Decision', '## Consequences', '- Date: ', '- Status: ']) expect(text, `${f}: ${part}`).toContain(part);
      expect(index, f).toContain(`](${f})`);
    }
  });
});
