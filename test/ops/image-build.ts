/**
 * docker/Dockerfile performed in a temporary folder, for machines without a Docker engine. Each stage gets a root
 * folder (`<into>/<stage>`) under which the image's paths live (`/app` is `<into>/<stage>/app`); stages run at once,
 * a `COPY --from` waiting for its stage (as BuildKit does). COPY copies from the build context or an earlier stage,
 * ENV, USER, ENTRYPOINT and CMD are recorded, and each command of a RUN step is performed by the handler that mirrors
 * it. An instruction or command without a handler fails the build: the Dockerfile changed, and this mirror must
 * learn the change before the test can pass again.
 *
 * Where it departs from Docker, and why:
 * - The build stage's full `npm ci` (dev dependencies, for tsc) is the repository's node_modules, linked: `npm ci`
 *   installed them from the same lockfile (checked byte for byte). Every other `npm ci` runs for real.
 * - `npm cache clean --force` only makes the image layer smaller; here it would empty this machine's shared cache.
 * - Node.js is this machine's, not the base image's.
 * - `chown <user>` gives the file to `owner` (the image's node user is uid/gid 1000) when the test runs as root;
 *   otherwise the files already belong to the (non-root) test user.
 */
import { spawn } from 'node:child_process';
import { chown, cp, mkdir, readFile, readdir, stat, symlink } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { envPairs, type Dockerfile, type Instruction, type Stage } from './dockerfile.js';

export interface Owner {
  uid: number;
  gid: number;
}

/** What the last stage (the image) ends up with. */
export interface ImageSpec {
  /** The image's `/`. */
  root: string;
  /** WORKDIR, under `root`. */
  workdir: string;
  env: Record<string, string>;
  user: string | undefined;
  entrypoint: string[];
  cmd: string[];
}

export interface BuildOptions {
  dockerfile: Dockerfile;
  context: string;
  into: string;
  /** Stages already built (their root folders): not performed again. */
  reuse?: Record<string, Promise<string>>;
  /** Who `chown` gives files to, when the test runs as root. */
  owner: Owner;
  /** The repository, whose node_modules stand in for the build stage's full install. */
  repository: string;
}

export interface Build {
  stage(name: string): Promise<string>;
  image: Promise<ImageSpec>;
}

export class UnmirroredStep extends Error {
  constructor(ins: Instruction, what: string) {
    super(`docker/Dockerfile line ${ins.line}: ${what} is not mirrored by test/ops/image-build.ts; teach it the step`);
  }
}

function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8_000)));
    child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8_000)));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} in ${cwd} exited ${String(code)}:\n${output}`))));
  });
}

/** .dockerignore patterns (no `**` in ours): a path is left out when it or a folder above it matches. */
async function ignoredBy(context: string): Promise<(path: string) => boolean> {
  const lines = (await readFile(join(context, '.dockerignore'), 'utf8').catch(() => '')).split('\n').map((l) => l.trim());
  const rules = lines
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negated = l.startsWith('!');
      const glob = negated ? l.slice(1) : l;
      const source = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]');
      return { negated, re: new RegExp(`^${source}(/|$)`) };
    });
  return (path) => rules.reduce((out, r) => (r.re.test(path) ? !r.negated : out), false);
}

async function filesUnder(path: string): Promise<string[]> {
  if (!(await stat(path)).isDirectory()) return [path];
  const entries = await readdir(path, { recursive: true, withFileTypes: true });
  return entries.filter((e) => !e.isDirectory()).map((e) => join(e.parentPath, e.name));
}

/** A stage being performed: its image spec so far, and where a path of the image is. */
interface StageState {
  spec: ImageSpec;
  inImage(path: string): string;
}
type Step = (state: StageState) => Promise<void>;

interface Context extends BuildOptions {
  roots: Map<string, Promise<string>>;
  ignored: Promise<(path: string) => boolean>;
  asRoot: boolean;
}

function planCopy(ins: Instruction, c: Context): Step {
  const words = ins.args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
  if (flags.length > (from ? 1 : 0) || paths.length < 2) throw new UnmirroredStep(ins, `COPY ${ins.args}`);
  if (from !== undefined && !c.dockerfile.stages.some((st) => st.name === from)) throw new UnmirroredStep(ins, `COPY --from=${from} (not a stage)`);
  const dest = paths.at(-1) ?? '';
  const sources = paths.slice(0, -1);
  return async ({ inImage }) => {
    const base = from === undefined ? c.context : await (c.roots.get(from) ?? Promise.reject(new Error(`stage ${from} not started`)));
    for (const source of sources) {
      const path = join(base, source);
      if (from === undefined) {
        const skip = await c.ignored;
        const left = (await filesUnder(path)).map((f) => relative(c.context, f)).filter(skip);
        if (left.length > 0) throw new Error(`docker/Dockerfile line ${ins.line}: .dockerignore leaves out ${left.join(', ')}; this mirror would copy them`);
      }
      const isDir = (await stat(path)).isDirectory();
      const intoDir = dest.endsWith('/') || sources.length > 1;
      const target = isDir || !intoDir ? inImage(dest) : join(inImage(dest), basename(source));
      await cp(path, target, { recursive: true, verbatimSymlinks: true });
    }
  };
}

/** One command of a RUN step (the step is split at `&&`). */
function planCommand(ins: Instruction, text: string, c: Context): Step {
  const words = text.split(/\s+/);
  if (words[0] === 'npm' && words[1] === 'ci') {
    if (words.includes('--omit=dev')) return ({ spec }) => run('npm', words.slice(1), spec.workdir);
    return async ({ spec }) => {
      const [ours, theirs] = await Promise.all([readFile(join(c.repository, 'package-lock.json')), readFile(join(spec.workdir, 'package-lock.json'))]);
      if (!ours.equals(theirs)) throw new Error(`docker/Dockerfile line ${ins.line}: the build stage's lockfile is not the repository's; its node_modules cannot stand in`);
      await symlink(join(c.repository, 'node_modules'), join(spec.workdir, 'node_modules'), 'dir');
    };
  }
  if (text === 'npm run build') return ({ spec }) => run('npm', ['run', 'build'], spec.workdir);
  if (text === 'npm cache clean --force') return async () => undefined;
  if (words[0] === 'mkdir' && words[1] === '-p' && words.length > 2) {
    return async ({ inImage }) => {
      for (const p of words.slice(2)) await mkdir(inImage(p), { recursive: true });
    };
  }
  if (words[0] === 'chown' && words.length > 2) {
    return async ({ inImage }) => {
      if (c.asRoot) for (const p of words.slice(2)) await chown(inImage(p), c.owner.uid, c.owner.gid);
    };
  }
  throw new UnmirroredStep(ins, `RUN ${text}`);
}

function planStep(ins: Instruction, last: boolean, c: Context): Step {
  switch (ins.op) {
    case 'WORKDIR':
      return async (st) => {
        st.spec.workdir = st.inImage(ins.args);
        await mkdir(st.spec.workdir, { recursive: true });
      };
    case 'COPY':
      return planCopy(ins, c);
    case 'RUN': {
      const commands = ins.args.split('&&').map((text) => planCommand(ins, text.trim(), c));
      return async (st) => {
        for (const command of commands) await command(st);
      };
    }
    case 'ENV': {
      const pairs = envPairs(ins.args);
      return async ({ spec }) => void pairs.forEach(([k, v]) => (spec.env[k] = v));
    }
    case 'USER':
      return async ({ spec }) => void (spec.user = ins.args);
    case 'ENTRYPOINT':
    case 'CMD': {
      const argv = JSON.parse(ins.args) as string[];
      return async ({ spec }) => void (ins.op === 'CMD' ? (spec.cmd = argv) : (spec.entrypoint = argv));
    }
    // Metadata of the image; HEALTHCHECK's command is run by test/ops/metrics.test.ts.
    case 'EXPOSE':
    case 'HEALTHCHECK':
    case 'STOPSIGNAL':
      if (!last) throw new UnmirroredStep(ins, `${ins.op} outside the last stage`);
      return async () => undefined;
    default:
      throw new UnmirroredStep(ins, ins.op);
  }
}

/** Every step is planned (and an unknown one refused) before anything is performed. */
export function performDockerfile(o: BuildOptions): Build {
  const c: Context = { ...o, roots: new Map(), ignored: ignoredBy(o.context), asRoot: process.getuid?.() === 0 };
  const stages = o.dockerfile.stages;
  const plans = stages.map((stage, i) => ({ stage, last: i === stages.length - 1, steps: stage.steps.map((ins) => planStep(ins, i === stages.length - 1, c)) }));

  const perform = async (stage: Stage, steps: Step[]): Promise<ImageSpec> => {
    const root = join(o.into, stage.name);
    await mkdir(root, { recursive: true });
    const spec: ImageSpec = { root, workdir: root, env: {}, user: undefined, entrypoint: [], cmd: [] };
    const state: StageState = { spec, inImage: (path) => (path.startsWith('/') ? join(root, path) : join(spec.workdir, path)) };
    for (const step of steps) await step(state);
    return spec;
  };

  let image: Promise<ImageSpec> | undefined;
  for (const { stage, last, steps } of plans) {
    const reused = o.reuse?.[stage.name];
    if (reused && !last) {
      c.roots.set(stage.name, reused);
      continue;
    }
    const done = perform(stage, steps);
    c.roots.set(stage.name, done.then((s) => s.root));
    if (last) image = done;
  }
  if (!image) throw new Error('docker/Dockerfile has no stage');
  // A stage nothing waits for must not fail unseen.
  for (const r of c.roots.values()) r.catch(() => undefined);
  return {
    stage: (name) => c.roots.get(name) ?? Promise.reject(new Error(`no stage ${name}`)),
    image,
  };
}
