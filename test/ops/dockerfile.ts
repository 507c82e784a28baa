/**
 * A Dockerfile read into stages of instructions: line continuations joined, comments dropped, `${ARG}` of the
 * global ARGs substituted in FROM. Enough of the format for docker/Dockerfile; anything else is kept as it is
 * and left to the caller to refuse.
 */

export interface Instruction {
  /** Upper-case keyword: FROM, RUN, COPY, ... */
  op: string;
  args: string;
  /** The line the instruction starts on. */
  line: number;
}

export interface Stage {
  name: string;
  base: string;
  steps: Instruction[];
}

export interface Dockerfile {
  args: Record<string, string>;
  stages: Stage[];
}

export function parseDockerfile(text: string): Dockerfile {
  const instructions: Instruction[] = [];
  let pending: { parts: string[]; line: number } | undefined;
  text.split('\n').forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#') || (trimmed === '' && !pending)) return;
    const continued = trimmed.endsWith('\\');
    const part = continued ? trimmed.slice(0, -1).trim() : trimmed;
    pending ??= { parts: [], line: i + 1 };
    if (part !== '') pending.parts.push(part);
    if (continued) return;
    const joined = pending.parts.join(' ');
    const space = joined.search(/\s/);
    instructions.push({ op: (space < 0 ? joined : joined.slice(0, space)).toUpperCase(), args: space < 0 ? '' : joined.slice(space + 1).trim(), line: pending.line });
    pending = undefined;
  });

  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'ARG' && stages.length === 0) {
      const [name = '', value = ''] = ins.args.split('=');
      args[name] = value;
    } else if (ins.op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m?.[1]) throw new Error(`Dockerfile line ${ins.line}: cannot read FROM ${ins.args}`);
      const base = m[1].replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a?: string, b?: string) => args[a ?? b ?? ''] ?? '');
      stages.push({ name: m[2] ?? String(stages.length), base, steps: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile line ${ins.line}: ${ins.op} before the first FROM`);
      stage.steps.push(ins);
    }
  }
  return { args, stages };
}

/** `KEY=value KEY2=value2` of ENV (values without spaces or quotes, as ours are). */
export function envPairs(args: string): [string, string][] {
  return args.split(/\s+/).map((pair) => {
    const i = pair.indexOf('=');
    if (i <= 0) throw new Error(`ENV ${args}: only KEY=value pairs are read`);
    return [pair.slice(0, i), pair.slice(i + 1)];
  });
}
