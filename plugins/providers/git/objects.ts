// Reading git's own object formats (SHA-1 repositories, as the mirrors are): a tree's entries and
// a commit's parents, from the bytes `git cat-file` gives. Walking a path through trees ourselves
// keeps every name cat-file receives a hex object id, and gives each entry's mode (a symlink or
// submodule at a path is "no file"). A malformed object is a clear error, never a guess.
import { SvcError } from '../../../core/errors.ts';

const OID_BYTES = 20;

export interface TreeEntry {
  /** Octal text as git stores it: `100644`, `100755`, `120000`, `160000`, `40000`. */
  mode: string;
  oid: string;
}

function malformed(oid: string, why: string): never {
  throw new SvcError('SVC_ERR_GIT_READ', `git object ${oid} in the mirror is malformed (${why}); remove the mirror directory to fetch it again`);
}

/** The entry named `name` (one path segment) in tree `oid`'s bytes, or null. */
export function findTreeEntry(tree: Buffer, oid: string, name: string): TreeEntry | null {
  const wanted = Buffer.from(name, 'utf8');
  let at = 0;
  while (at < tree.length) {
    const space = tree.indexOf(0x20, at);
    if (space < 0) malformed(oid, 'an entry without a mode');
    const nul = tree.indexOf(0x00, space + 1);
    if (nul < 0 || nul + 1 + OID_BYTES > tree.length) malformed(oid, 'an entry cut short');
    const entryName = tree.subarray(space + 1, nul);
    if (entryName.equals(wanted)) {
      const mode = tree.toString('latin1', at, space);
      if (!/^[0-7]{5,6}$/.test(mode)) malformed(oid, `mode ${JSON.stringify(mode.slice(0, 20))}`);
      return { mode, oid: tree.toString('hex', nul + 1, nul + 1 + OID_BYTES) };
    }
    at = nul + 1 + OID_BYTES;
  }
  return null;
}

/** The first parent of a commit (null for a root commit), from its bytes. */
export function firstParent(commit: Buffer, oid: string): string | null {
  const text = commit.toString('utf8');
  const headerEnd = text.indexOf('\n\n');
  const lines = (headerEnd < 0 ? text : text.slice(0, headerEnd)).split('\n');
  if (!/^tree [0-9a-f]{40}$/.test(lines[0] ?? '')) malformed(oid, 'a commit without a tree line');
  const parent = lines.find((l) => l.startsWith('parent '));
  if (parent === undefined) return null;
  if (!/^parent [0-9a-f]{40}$/.test(parent)) malformed(oid, 'a parent line that is not an object id');
  return parent.slice('parent '.length);
}
