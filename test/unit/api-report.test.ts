/**
 * The public API is on record: api/<entry>.api.md holds what each entry point of the package
 * exports, as TypeScript declares it. A change to the API fails here until `npm run api:report`
 * writes the report again, so the change is a diff a reviewer sees.
 */
import { strict as assert } from 'node:assert'
import { readFileSync } from 'node:fs'
import { cachedApiReports, ENTRIES, reportPath } from '../../scripts/api-report'

describe('api report: the public API kept in the repository', function () {
  // Two TypeScript programs over src/: seconds of CPU, longer on a busy machine; once per state
  // of the sources (the reports are cached by their hash).
  this.timeout(600_000)

  let reports: Record<string, string> = {}
  before(() => {
    reports = cachedApiReports()
  })

  for (const name of Object.keys(ENTRIES)) {
    it(`api/${name}.api.md is what the entry exports (else run npm run api:report and review the diff)`, () => {
      assert.equal(reports[name], readFileSync(reportPath(name), 'utf8'))
    })
  }

  it('the report shows what it checks: an export, a class body and a declaration it refers to', () => {
    const index = reports.index!
    assert.match(index, /\/\/ export StateStoreClient\nexport declare class StateStoreClient /)
    assert.match(index, /export declare class Hlc \{/, 'the clock class behind `export const { Hlc } = hlc`')
    assert.doesNotMatch(
      index,
      /\/\/ export (SERVICE_ERROR_TEXT|MAX_HLC_COUNTER|KEY_LOCK_SUFFIX)\n/,
      'internal constants are not exported',
    )
    assert.doesNotMatch(
      reports.emulator!,
      /\/\/ export (ADMIN_REQUEST_TOPIC|adminResponseTopic|AdminRequest)\n/,
      "the admin channel's wire is internal",
    )
  })
})
