"""What the offline commands compute, apart from their command lines: scored runs of files and their
rows (:mod:`._results`), judging them with the online judge's limits (:mod:`._judging`), the judge's
calibration set (:mod:`._calibration`) and the HTML report (:mod:`._report`)."""
