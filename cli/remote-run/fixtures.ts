// Test fixtures (spec "Test fixture"): `.svc/tests/*.ts` (or `*.mjs` in mjs mode) files whose
// exports are `fixture(id, options)` values. They are imported the way the compiler imports
// workflows (Node strips the types; `svc/sdk` resolves to this CLI's SDK). Ids are unique across
// files; a file exporting no fixture is an error naming it.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import picomatch from 'picomatch';
import { InputError, messageOf } from '../../core/errors.ts';
import { isFixture, resolveFixture, type Fixture, type FixtureOptions } from '../../sdk/fixture.ts';
import { registerSdkResolution } from '../../workflow/sdk-resolution.ts';

export const TESTS_DIR = '.svc/tests';

export interface LoadedFixture {
  id: string;
  /** Repo-relative POSIX path of the file declaring it. */
  file: string;
  fixture: Fixture;
}

async function fixtureFiles(root: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(path.join(root, TESTS_DIR));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new InputError('SVC_ERR_FIXTURE_LOAD', `cannot read ${TESTS_DIR}: ${messageOf(error)}`);
  }
  const ts = names.filter((n) => n.endsWith('.ts') && !n.endsWith('.d.ts'));
  const mjs = names.filter((n) => n.endsWith('.mjs'));
  return (ts.length > 0 ? ts : mjs).sort().map((n) => `${TESTS_DIR}/${n}`);
}

/** Every fixture of the project at `root`, in file then export order. */
export async function loadFixtures(root: string): Promise<LoadedFixture[]> {
  const files = await fixtureFiles(root);
  if (files.length === 0) return [];
  registerSdkResolution();
  const out: LoadedFixture[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(path.join(root, file)).href)) as Record<string, unknown>;
    } catch (error) {
      throw new InputError('SVC_ERR_FIXTURE_LOAD', `${file}: failed to load: ${messageOf(error).split('\n')[0]}`);
    }
    const found = Object.values(mod).filter(isFixture);
    if (found.length === 0) throw new InputError('SVC_ERR_FIXTURE_LOAD', `${file}: exports no fixture; export default fixture('id', { event: push() })`);
    for (const fixture of new Set(found)) {
      const other = seen.get(fixture.id);
      if (other !== undefined) throw new InputError('SVC_ERR_FIXTURE_LOAD', `fixture id "${fixture.id}" is declared in ${other} and ${file}; ids must be unique`);
      seen.set(fixture.id, file);
      out.push({ id: fixture.id, file, fixture });
    }
  }
  return out;
}

/** Fixtures whose id is `name` or matches it as a glob; none: an error listing the ids. */
export function selectFixtures(all: readonly LoadedFixture[], name: string): LoadedFixture[] {
  const exact = all.filter((f) => f.id === name);
  if (exact.length > 0) return exact;
  const isMatch = picomatch(name);
  const matched = all.filter((f) => isMatch(f.id));
  if (matched.length === 0) {
    throw new InputError('SVC_ERR_FIXTURE_NOT_FOUND', `no fixture matches "${name}"; fixtures: ${all.map((f) => f.id).join(', ') || `none (add one under ${TESTS_DIR}/)`}`);
  }
  return matched;
}

/** The fixture's options (the async form called), checked enough to build an event from. */
export async function fixtureOptions(loaded: LoadedFixture): Promise<FixtureOptions> {
  let options: FixtureOptions;
  try {
    options = await resolveFixture(loaded.fixture);
  } catch (error) {
    throw new InputError('SVC_ERR_FIXTURE_LOAD', `fixture "${loaded.id}" (${loaded.file}): its options function failed: ${messageOf(error)}`);
  }
  const event = (options as { event?: { kind?: unknown; type?: unknown } } | null)?.event;
  if (event?.kind !== 'svc.trigger' || typeof event.type !== 'string') {
    throw new InputError('SVC_ERR_FIXTURE_LOAD', `fixture "${loaded.id}" (${loaded.file}): "event" must be a trigger function result such as push() or pr({ actions: ['opened'] })`);
  }
  return options;
}
