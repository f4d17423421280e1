// Hidden tests for the string utilities assignment (6 tests).
// Every test sits inside describe() so that each one is reported as a
// <testcase> of a <testsuite> in the JUnit report.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isPalindrome, countVowels, capitalizeWords, toSnakeCase } from './solution.mjs';

describe('strings', () => {
  test('isPalindrome accepts simple palindromes', () => {
    assert.equal(isPalindrome('level'), true);
    assert.equal(isPalindrome('hello'), false);
  });

  test('isPalindrome ignores case and punctuation', () => {
    assert.equal(isPalindrome('A man, a plan, a canal: Panama!'), true);
    assert.equal(isPalindrome('Never odd or even.'), true);
  });

  test('countVowels counts upper and lower case', () => {
    assert.equal(countVowels('Programming'), 3);
    assert.equal(countVowels('AEIOU xyz'), 5);
    assert.equal(countVowels(''), 0);
  });

  test('capitalizeWords capitalizes each word', () => {
    assert.equal(capitalizeWords('hello big world'), 'Hello Big World');
  });

  test('capitalizeWords keeps the spacing', () => {
    assert.equal(capitalizeWords('  two  spaces '), '  Two  Spaces ');
  });

  test('toSnakeCase converts camelCase', () => {
    assert.equal(toSnakeCase('numberOfStudents'), 'number_of_students');
    assert.equal(toSnakeCase('x'), 'x');
  });
});
