// What `svc init` writes under `.svc/`. Kept as text here (not asset files) so the compiled
// package needs no copy step. The workflow is built from what the repository holds
// (cli/init/detect.ts), so the first run passes.
import { DEFAULT_SVCIGNORE } from '../../workflow/hash/index.ts';
import type { Detection } from './detect.ts';

/** A TypeScript string literal (single quotes, as the rest of the generated code). */
function quote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
}

/** `await ctx.$\`<command>\`;` with the command's text escaped for a template literal. */
function shellLine(command: string): string {
  return `await ctx.$\`${command.replace(/[`\\]/g, '\\$&').replace(/\$\{/g, '\\${')}\`;`;
}

/**
 * `.svc/workflows/ci.ts` for what `svc init` detected: one job on `linux` whose steps build and
 * test the project (cli/init/detect.ts), on pushes to `branch` and on pull requests.
 */
export function ciWorkflow(detection: Detection, branch: string): string {
  const steps = detection.steps.map((step) => {
    const body = step.commands.map((c) => `            ${shellLine(c)}`).join('\n');
    return `          .step(${quote(step.name)}, async (ctx) => {\n${body}\n          })`;
  });
  const what =
    detection.kind === 'none'
      ? `\`svc init\` found ${detection.basis}, so the job\n// lists the repository's files: replace that step with your build.`
      : `\`svc init\` detected: ${detection.label} (${detection.basis}).`;
  return `// CI for this repository. ${what}
// Runs on pushes to ${branch} and on pull requests. \`svc compile\` turns this file into
// .svc/svc.lock.json; commit both (\`svc hook install\` keeps the lock in step on every commit).
// \`svc preview push\` shows what an event would run; \`svc run push --local\` runs it here.
import { job, pr, push, workflow } from 'svc/sdk';

export default workflow('ci', {
  on: [push({ branches: [${quote(branch)}] }), pr()],
  jobs: {
    build: job({
      runsOn: ['linux'],
      steps: (s) =>
        s
${steps.join('\n')},
    }),
  },
});
`;
}

export const CI_FIXTURE = `// A test fixture for \`svc run remote\`: the event to run the workflows against. Branch, sha and
// repository default to the local git checkout; override them here when needed.
import { fixture, pr } from 'svc/sdk';

export default fixture('ci-pull-request', {
  event: pr({ actions: ['opened'] }),
  branch: 'feature/example',
});
`;

export const SVC_GITIGNORE = `# Machine-local files under .svc/ (also left out of the content hash by .svcignore).
node_modules/
types/
`;

/** `.svc/tsconfig.json`: editors resolve \`svc/sdk\` through \`svc types\` or the installed package. */
export function tsconfigJson(): string {
  const config = {
    compilerOptions: {
      target: 'es2024',
      lib: ['es2024'],
      module: 'nodenext',
      moduleResolution: 'nodenext',
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      erasableSyntaxOnly: true,
      verbatimModuleSyntax: true,
      skipLibCheck: true,
      paths: {
        'svc/sdk': ['./types/svc-sdk.d.ts', './node_modules/svc/dist/sdk/index.d.ts'],
        svc: ['./types/svc-sdk.d.ts', './node_modules/svc/dist/sdk/index.d.ts'],
      },
    },
    include: ['workflows', 'tests', 'types'],
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** `.svc/package.json`: an ES module project with a devDependency on svc for editor types. */
export function packageJson(svcVersion: string): string {
  const pkg = {
    name: 'svc-workflows',
    private: true,
    type: 'module',
    description: 'CI workflows run by svc (.svc/workflows/*.ts)',
    devDependencies: { svc: `^${svcVersion}` },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

export { DEFAULT_SVCIGNORE };
