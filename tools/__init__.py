"""The pilots: one-off measurements behind a decision of the study (their reports in reports/pilot/),
run as `python -m tools.<pilot>`. The day-to-day commands are the package's: `python -m replication --help`."""
