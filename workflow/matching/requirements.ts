// Content requirements (`requires`) of a matched trigger, read at the event ref (spec,
// processing step 13). A candidate that fails or cannot be evaluated is dropped with the reason
// this returns; reading is the caller's (git, forge API), so this stays pure.
import type { LockRequirement } from '../../schemas/lock.ts';
import { messageOf } from '../../core/errors.ts';

export type RequirementResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Reads a repository-relative file at the event ref: its text, or `null` when it does not exist. */
export type ReadFile = (path: string) => Promise<string | null>;

function describe(req: LockRequirement): string {
  switch (req.type) {
    case 'file-exists':
      return `file ${JSON.stringify(req.path)} must exist`;
    case 'file-absent':
      return `file ${JSON.stringify(req.path)} must be absent`;
    case 'file-contains':
      return `file ${JSON.stringify(req.path)} must contain ${JSON.stringify(req.text)}`;
  }
}

/**
 * Evaluate requirements in order and stop at the first that is not met. Each path is read at
 * most once. A read that throws makes the requirement "cannot be evaluated", which drops the
 * candidate like a failure does.
 */
export async function evaluateRequirements(requirements: readonly LockRequirement[], readFile: ReadFile): Promise<RequirementResult> {
  const contents = new Map<string, string | null>();
  for (const req of requirements) {
    let text: string | null;
    if (contents.has(req.path)) {
      text = contents.get(req.path)!;
    } else {
      try {
        text = await readFile(req.path);
      } catch (cause) {
        return { ok: false, reason: `requirement "${describe(req)}" cannot be evaluated: ${messageOf(cause)}` };
      }
      if (text !== null && typeof text !== 'string') {
        return { ok: false, reason: `requirement "${describe(req)}" cannot be evaluated: the file reader returned no text` };
      }
      contents.set(req.path, text);
    }
    switch (req.type) {
      case 'file-exists':
        if (text === null) return { ok: false, reason: `requirement not met: ${describe(req)}, but it does not` };
        break;
      case 'file-absent':
        if (text !== null) return { ok: false, reason: `requirement not met: ${describe(req)}, but it exists` };
        break;
      case 'file-contains':
        if (text === null) return { ok: false, reason: `requirement not met: ${describe(req)}, but the file does not exist` };
        if (!text.includes(req.text)) return { ok: false, reason: `requirement not met: ${describe(req)}, but it does not` };
        break;
    }
  }
  return { ok: true };
}
