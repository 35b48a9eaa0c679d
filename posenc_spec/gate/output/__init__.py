"""What the gate writes: text for a person (:mod:`.text`), the versioned JSON report
(:mod:`.json_report`), JUnit XML (:mod:`.junit`), GitHub annotations (:mod:`.annotations`),
and the rules for writing any of them to a path (:mod:`.destination`)."""
