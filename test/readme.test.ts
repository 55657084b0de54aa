/**
 * The README is tested (issue 24, item 1): its ```sh blocks run, in order, against a real knode started as
 * the README says (`npm start`, here on a free port through SVC_PORT, with a fresh SVC_DATA_DIR and HOME).
 *
 * - A README section (a `## ` heading and its `### ` subsections) runs in one bash (`set -euo pipefail`), its
 *   blocks one after the other, so that the variables a block sets (TOKEN, DATASET...) reach the next ones,
 *   as they would in a reader's terminal.
 * - What a block needs from outside is said in the README, in an HTML comment just before its fence:
 *   `<!-- readme-test: <what> <url> = test double test/fakes/<file>.ts ... -->` runs it with that address
 *   replaced by the double's (each double listens on a free loopback port, so no test ever depends on a fixed
 *   port being free); `<!-- readme-test: skip: <reason> -->` leaves it out, for a reason a reader can check.
 * - The README addresses knode as http://127.0.0.1:8080 (its default port): that is replaced by the address
 *   of the knode started here.
 * - Every `curl` fails on an HTTP error (its body printed): a README example that quietly answers 404 or 422
 *   would be a broken example, so the test gives `curl` `--fail-with-body` when the README did not ask for it.
 * - GGUF files the README downloads to `$HOME/models/` are written here instead (a tiny model, no network).
 *
 * Nothing here reaches the network: the doubles listen on loopback, and knode is only ever asked to call them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Subprocess } from 'bun';
import { writeTinyGguf } from '../scripts/fixtures/make-tiny-gguf.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';

const ROOT = join(import.meta.dir, '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

interface Block {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  /** The `readme-test:` comments just before the fence, without the prefix. */
  markers: string[];
}

interface Section {
  title: string;
  blocks: Block[];
}

/** The `## ` sections of a Markdown text with their ```sh blocks, in order. */
function shellSections(markdown: string): Section[] {
  const sections: Section[] = [];
  const lines = markdown.split('\n');
  let current: Section = { title: '(before the first section)', blocks: [] };
  let markers: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.startsWith('## ')) {
      if (current.blocks.length > 0) sections.push(current);
      current = { title: line.slice(3).trim(), blocks: [] };
      markers = [];
      continue;
    }
    const marker = /^<!--\s*readme-test:\s*(.*?)\s*-->\s*$/.exec(line);
    if (marker) {
      markers.push(marker[1] ?? '');
      continue;
    }
    const fence = /^```(\S*)/.exec(line);
    if (fence) {
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !(lines[i] ?? '').startsWith('```'); i++) body.push(lines[i] ?? '');
      if (fence[1] === 'sh') current.blocks.push({ line: start + 1, code: body.join('\n'), markers });
      markers = [];
      continue;
    }
    // A marker belongs to the fence right after it (blank lines allowed in between), never to a later one.
    if (line.trim() !== '') markers = [];
  }
  if (current.blocks.length > 0) sections.push(current);
  return sections;
}

/**
 * Sections whose text belongs to other work (issue 24 leaves the Retrieval section to the retrieval work), so
 * their blocks cannot carry a marker: what they run, and why it does not run here.
 */
const SKIPPED_SECTIONS: Record<string, string> = {
  Retrieval:
    'the evaluation indexes hundreds of documents for minutes; test/retrieval-eval.test.ts runs its small set (--small) in npm test',
};

function skipReason(block: Block, section?: Section): string | undefined {
  const whole = section ? SKIPPED_SECTIONS[section.title] : undefined;
  if (whole) return whole;
  for (const marker of block.markers) {
    const match = /^skip\b:?\s*(.*)$/.exec(marker);
    if (match) return match[1] ?? '';
  }
  return undefined;
}

/** `<url> = test double test/fakes/<file>.ts`: the address the README names, and the double standing in. */
function doubles(block: Block): { url: string; double: string }[] {
  const found: { url: string; double: string }[] = [];
  for (const marker of block.markers) {
    const match = /(https?:\/\/[^\s=]+)\s*=\s*test double (test\/fakes\/[\w-]+\.ts)/.exec(marker);
    if (match?.[1] && match[2]) found.push({ url: match[1].replace(/\/$/, ''), double: match[2] });
  }
  return found;
}

/** A port nobody listens on now (the kernel's pick), for SVC_PORT. */
function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

const sections = shellSections(README);

/** npm asks its registry whether a newer npm exists: the test stays on loopback. */
const NPM_OFFLINE = { npm_config_update_notifier: 'false' };

/**
 * Set in the shells that run the README: should a block that runs `npm test` ever lose its skip marker, the
 * suite it starts does not run the README again (which would start `npm test` again, without end).
 */
const NESTED = 'KNODE_README_TEST_RUNNING';
const nested = process.env[NESTED] === '1';

/**
 * What the README says some calls answer, in its comments: each must appear in the section's output (that
 * every call succeeded is already checked: curl fails on an HTTP error).
 */
const PROMISED: Record<string, string[]> = {
  'Two commands': ['"status":"ok"'],
  'A first session with curl': [
    '"healthy":true',
    '"source":"set"',
    "Published to 'syfthub'",
    // The consumer's query was answered and recorded under her hub e-mail, past the owner's allow list.
    '"sender_email":"carol@example.org"',
    'data: [DONE]',
    '"wallet_address":"0x742d35Cc6634c0532925a3b844bC9e7595F8fE00","testnet":true,"rpc_url":null,"chain_id":42431',
  ],
};

let scratch: string;
let home: string;
let knodeUrl: string;
let knode: Subprocess<'ignore', 'pipe', 'pipe'> | undefined;
let knodeOutput = '';
let model: FakeOpenAIServer;
let hub: FakeSyftHub;
const doubleUrls = new Map<string, string>();

/** Reads a pipe to its end (a full pipe would block knode's next log line), keeping what it said. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) knodeOutput += decoder.decode(chunk, { stream: true });
}

beforeAll(async () => {
  if (nested) return;
  scratch = mkdtempSync(join(tmpdir(), 'knode-readme-'));
  home = join(scratch, 'home');
  mkdirSync(home);
  // The models the README downloads, as tiny stand-ins at the same paths.
  for (const match of README.matchAll(/\$HOME\/models\/([\w.-]+\.gguf)/g)) {
    const path = join(home, 'models', match[1] ?? '');
    mkdirSync(dirname(path), { recursive: true });
    writeTinyGguf(path);
  }

  model = startFakeOpenAI({ models: ['llama3.2'] });
  // The newest hub (with the satellite registry), with the README's two accounts: ada publishes, carol consumes.
  hub = await startFakeSyftHub({ version: '2026-09' });
  hub.addUser({ username: 'ada', email: 'ada@example.com', password: 'my hub password' });
  hub.addUser({ username: 'carol', email: 'carol@example.org', password: 'her hub password' });
  doubleUrls.set('test/fakes/openai-server.ts', model.url.replace(/\/v1$/, ''));
  doubleUrls.set('test/fakes/syfthub.ts', hub.url.replace(/\/$/, ''));

  const port = freePort();
  knodeUrl = `http://127.0.0.1:${port}`;
  // As a reader starts it: `npm start` in the checkout. Only PATH comes from the test's environment, so a
  // developer's SVC_* variables cannot change what the README's examples meet.
  knode = Bun.spawn(['npm', 'start'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: home, SVC_PORT: String(port), SVC_DATA_DIR: join(scratch, 'data'), ...NPM_OFFLINE },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    // Its own process group, so that stopping it reaches knode itself: npm exits on SIGTERM without passing it
    // on, which left knode running after the test.
    detached: true,
  });
  void drain(knode.stdout);
  void drain(knode.stderr);
  // Ready when /health answers; knode's own log says why when it never does.
  for (let attempt = 0; ; attempt++) {
    const healthy = await fetch(`${knodeUrl}/api/v1/health`)
      .then((response) => response.ok)
      .catch(() => false);
    if (healthy) break;
    if (knode.exitCode !== null || attempt >= 600) throw new Error(`knode did not start:\n${knodeOutput}`);
    await Bun.sleep(100);
  }
}, 90_000);

/** Whether anything still answers on knode's port (npm's exit does not say that knode has stopped). */
async function listening(): Promise<boolean> {
  return fetch(`${knodeUrl}/api/v1/health`).then(
    () => true,
    () => false,
  );
}

afterAll(async () => {
  if (knode) {
    const group = -knode.pid;
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(group, name);
      } catch {
        // The group is gone already (knode exited at start-up): nothing to stop.
      }
    };
    // SIGTERM to npm and knode alike; knode stops within 8 s (README, Security), else it is killed.
    signal('SIGTERM');
    for (let attempt = 0; attempt < 150 && (await listening()); attempt++) await Bun.sleep(100);
    if (await listening()) signal('SIGKILL');
    await knode.exited;
  }
  await model?.close();
  await hub?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Every `curl` fails on an HTTP error and says why, unless the README chose its own way (-f, --fail...). */
const PREAMBLE = `set -euo pipefail
curl() {
  local arg
  for arg in "$@"; do
    if [[ $arg == --fail* || $arg =~ ^-[a-zA-Z]*f ]]; then command curl "$@"; return; fi
  done
  command curl --fail-with-body -S "$@"
}
`;

/** The section's runnable blocks as one script, each announced on stderr so a failure names its block. */
function script(section: Section): string {
  const parts = [PREAMBLE];
  for (const block of section.blocks) {
    if (skipReason(block, section) !== undefined) continue;
    let code = block.code.replaceAll('http://127.0.0.1:8080', knodeUrl);
    for (const { url, double } of doubles(block)) code = code.replaceAll(url, doubleUrls.get(double) ?? url);
    parts.push(`echo ${JSON.stringify(`::: README.md line ${block.line}`)} >&2\n${code}\n`);
  }
  return parts.join('\n');
}

describe.skipIf(nested)('README.md', () => {
  test('every sh block runs here, or says why not; the doubles it names exist', () => {
    const problems: string[] = [];
    for (const section of sections) {
      for (const block of section.blocks) {
        const reason = skipReason(block);
        if (reason !== undefined && reason.length < 10) problems.push(`line ${block.line}: a skip needs its reason`);
        for (const { double } of doubles(block)) {
          if (!doubleUrls.has(double)) problems.push(`line ${block.line}: no such double here: ${double}`);
        }
        for (const marker of block.markers) {
          const understood = /^skip\b/.test(marker) || doubles({ ...block, markers: [marker] }).length > 0;
          if (!understood) problems.push(`line ${block.line}: marker not understood: ${marker}`);
        }
      }
    }
    expect(problems).toEqual([]);
    // The walkthrough is the README's point: it is never skipped.
    const walkthrough = sections.find((section) => section.title.startsWith('A first session with curl'));
    expect(walkthrough?.blocks.length).toBeGreaterThan(5);
    expect(walkthrough?.blocks[0]?.code).toContain('/auth/register');
    expect(walkthrough && skipReason(walkthrough.blocks[0] as Block)).toBeUndefined();
  });

  test("the walkthrough's `field` takes the answer's own id, and an error answer is never taken for one", async () => {
    const walkthrough = sections.find((section) => section.title.startsWith('A first session with curl'));
    const definition = /^field\(\) \{[\s\S]*?; \}$/m.exec(walkthrough?.blocks[0]?.code ?? '')?.[0];
    expect(definition).toBeDefined();
    const field = async (answer: string, name: string) => {
      const shell = Bun.spawn(['bash', '-c', `set -euo pipefail\n${definition}\nprintf '%s' "$1" | field "$2"`, 'field', answer, name], {
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const [stdout, stderr, status] = await Promise.all([
        new Response(shell.stdout).text(),
        new Response(shell.stderr).text(),
        shell.exited,
      ]);
      return { stdout: stdout.trim(), stderr: stderr.trim(), status };
    };
    // An endpoint's view names its dataset's id after its own: the first sed of the old README took that one.
    const endpoint = '{"id":"endpoint-1","slug":"my-papers","dataset":{"id":"dataset-1"},"model":{"id":"model-1"}}';
    expect(await field(endpoint, 'id')).toEqual({ stdout: 'endpoint-1', stderr: '', status: 0 });
    // A refusal is printed for the reader and stops the step: it never becomes the next step's id.
    const refusal = '{"detail":"Endpoint not found"}';
    expect(await field(refusal, 'id')).toEqual({ stdout: '', stderr: refusal, status: 1 });
    expect(await field('', 'id')).toEqual({ stdout: '', stderr: '(no answer)', status: 1 });
  });

  for (const section of sections) {
    const runnable = section.blocks.filter((block) => skipReason(block, section) === undefined);
    if (runnable.length === 0) continue;
    test(`## ${section.title}: its examples run as written`, async () => {
      const shell = Bun.spawn(['bash', '-c', script(section)], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: home, LANG: 'C.UTF-8', ...NPM_OFFLINE, [NESTED]: '1' },
        stdin: 'ignore',
        // A bound, not a measure: a block that hangs (a stream that never ends) fails the test instead of holding it.
        timeout: 110_000,
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const [stdout, stderr, status] = await Promise.all([
        new Response(shell.stdout).text(),
        new Response(shell.stderr).text(),
        shell.exited,
      ]);
      // README_TEST_OUTPUT=1 shows what the examples printed, to read them as a reader would.
      if (process.env.README_TEST_OUTPUT) console.log(`## ${section.title}\n${stderr}\n${stdout}`);
      if (status !== 0) {
        const tail = (text: string) => text.split('\n').slice(-40).join('\n');
        throw new Error(
          `the section's examples stopped (exit ${status})\n--- stderr (the last block announced is the one that failed)\n${tail(stderr)}\n--- stdout\n${tail(stdout)}\n--- knode\n${tail(knodeOutput)}`,
        );
      }
      expect(status).toBe(0);
      const missing = (PROMISED[section.title] ?? []).filter((text) => !stdout.includes(text));
      expect(missing).toEqual([]);
    }, 120_000);
  }

  // Last, since it ends the knode the sections use. A service manager or `kill` stops `npm start` with SIGTERM
  // to npm alone: the script execs bun, else the shell between them died and left knode running.
  test('SIGTERM to `npm start` stops knode', async () => {
    if (!knode) throw new Error('knode was not started');
    knode.kill('SIGTERM');
    await knode.exited;
    // npm's exit is knode's, since the script execs bun; the port is checked too, in case that ever changes.
    for (let attempt = 0; attempt < 300 && (await listening()); attempt++) await Bun.sleep(100);
    expect(await listening()).toBe(false);
  }, 60_000);
});
