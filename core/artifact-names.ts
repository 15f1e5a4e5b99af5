// Artifact names (ctx.artifacts, docs/artifacts.md). A name becomes part of URLs the relay serves
// and of file names a developer writes, so it is a plain file-name-like token: checked the same
// way by the agent (before packing anything) and by the orchestrator (whatever an agent sends).
import { InputError } from './errors.ts';

export const ARTIFACT_NAME_MAX = 128;
const NAME = /^[A-Za-z0-9_+][A-Za-z0-9._+-]*$/;

/** Why `name` is refused, or null when it is a valid artifact name. */
export function artifactNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'it must be a non-empty string';
  if (name.length > ARTIFACT_NAME_MAX) return `it is longer than ${ARTIFACT_NAME_MAX} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'it contains control characters';
  if (name.includes('/') || name.includes('\\')) return 'it contains a path separator';
  if (name.includes('..')) return 'it contains ".."';
  if (!NAME.test(name)) return 'only letters, digits and . _ + - are allowed, and it cannot start with "." or "-"';
  return null;
}

/** Throws SVC_ERR_ARTIFACT_NAME_INVALID unless `name` is a valid artifact name. */
export function checkArtifactName(name: unknown): string {
  const problem = artifactNameProblem(name);
  if (problem !== null) {
    const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 80)) : String(typeof name);
    throw new InputError('SVC_ERR_ARTIFACT_NAME_INVALID', `artifact name ${shown} is refused: ${problem}; use 1-${ARTIFACT_NAME_MAX} characters of letters, digits and . _ + -`, {
      details: { problem },
    });
  }
  return name as string;
}
