// ESLint, flat config. TypeScript is linted with type information (tsconfig.test.json covers src/,
// nodes/ and test/), so a promise left floating, or handed to a callback that ignores what it
// returns, fails the lint. The scripts and benchmarks are plain Node.js modules.
import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

const unusedVars = [
  'error',
  { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
]

// The editor's JavaScript inside the nodes' and the sidebar's .html files: the text/javascript
// script blocks, linted in place (every other line blanked, so line numbers stay the file's).
const SCRIPT = /<script type="text\/javascript">\n([\s\S]*?)<\/script>/g
const editorScripts = {
  preprocess(text) {
    const lines = text.split('\n').map(() => '')
    for (const match of text.matchAll(SCRIPT)) {
      const first = text.slice(0, match.index).split('\n').length
      match[1].split('\n').forEach((line, i) => (lines[first + i] = line))
    }
    return [{ text: lines.join('\n'), filename: 'editor.js' }]
  },
  postprocess: (messages) => messages.flat(),
  supportsAutofix: false,
}
const editorGlobals = { ...globals.browser, RED: 'readonly', $: 'readonly', jQuery: 'readonly' }

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'bench/results/', '**/*.d.ts'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // The compiler's noFallthroughCasesInSwitch checks this, and knows an exhaustive inner switch returns.
      'no-fallthrough': 'off',
      // An object with its own toString (Hlc, errors) belongs in a message as it is.
      '@typescript-eslint/restrict-template-expressions': 'off',
      // An async function that does not await still turns a throw into a rejection, which callers rely on.
      '@typescript-eslint/require-await': 'off',
      // Node-RED's own idiom for a node's constructor.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['node'] }],
      '@typescript-eslint/no-unused-vars': unusedVars,
      // A caught value passed on as it came is not a new rejection reason.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  {
    // Tests load Node-RED's untyped modules with require, print whatever they got, and hand
    // comparators such as Hlc.compare to sort: the promise rules stay, the type-safety ones go.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    ignores: ['resources/**'],
    languageOptions: { globals: { ...globals.node } },
    rules: { 'no-unused-vars': unusedVars },
  },
  {
    // The editor's JavaScript runs in the browser, as scripts: resources/ and the .html files' script blocks.
    files: ['resources/**/*.js'],
    languageOptions: { sourceType: 'script', globals: editorGlobals },
    rules: { 'no-unused-vars': unusedVars },
  },
  {
    files: ['nodes/*.html'],
    plugins: { editor: { processors: { scripts: editorScripts } } },
    processor: 'editor/scripts',
  },
  {
    files: ['nodes/*.html/*.js'],
    languageOptions: { sourceType: 'script', globals: editorGlobals },
    rules: { 'no-unused-vars': unusedVars },
  },
)
