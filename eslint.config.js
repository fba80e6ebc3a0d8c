// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import regexp from "eslint-plugin-regexp";

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "packages/*/dist/",
      "packages/publish/action/",
      "dist-bench/",
      "node_modules/",
      "test-results/",
      "bench/results/",
      "coverage/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strict,
  // No pattern in the service or the packages may backtrack super-linearly: they run on request
  // input, or (the SDK) on what a network answers.
  {
    files: ["src/**/*.ts", "packages/*/src/**/*.ts"],
    plugins: { regexp },
    rules: {
      "regexp/no-super-linear-backtracking": "error",
      "regexp/no-super-linear-move": "error",
    },
  },
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-non-null-assertion": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "error",
    },
  },
  {
    files: ["bin/**/*.js", "scripts/**/*.js", "eslint.config.js"],
    languageOptions: { globals: { process: "readonly", URL: "readonly" } },
  },
);
