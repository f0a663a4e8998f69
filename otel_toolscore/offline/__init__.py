"""What the offline commands compute, apart from their command lines: scored runs of files and their
rows (:mod:`.results`), judging them with the online judge's limits (:mod:`.judging`), the judge's
calibration set (:mod:`.calibration`) and the HTML report (:mod:`.report`)."""
