"""The class around grading: a roster, the LMS's download, deadlines, a history of gradings, grades back to the LMS,
item analysis and copying signals.

One module per idea, data flowing one way (roster -> unpack -> layouts -> identity -> collect feed
`routes.class_grading`; deadlines, history, grades_export, stats and copying read what grading stored):

| module | takes | gives |
|---|---|---|
| `roster` | a roster CSV | `Roster` of `Student`s (with extensions) |
| `unpack` | a whole-class zip | a folder of its gradable members, each refusal a note |
| `layouts` | a folder as an LMS hands it out | `Entry`s: a file to grade, who the LMS says it is, when |
| `identity` | entries, STUDENT_IDs, a roster | one `Decision` per entry: the roster id or why none |
| `collect` | SUBMISSIONS and a roster | `ClassIntake`: `Submission`s, `IntakeRow`s (intake.csv), times |
| `deadlines` | a late policy, a time, an extension | `LateOutcome`: raw, penalty, final and the rule |
| `classbook` | the gradebook | the roster snapshot and late outcomes stored beside the grades |
| `history` | the gradebook | each student's trail of gradings; who gained or lost points |
| `grades_export` | the gradebook | Canvas / Moodle / plain CSV and a comment file |
| `canvas_push` | grade lines, a Canvas URL and token | the changes, posted through canvasapi (or only listed) |
| `stats` | the gradebook | item analysis: facility, discrimination, alpha, distractors |
| `stats_page` | `ItemAnalysis` | stats.html with plots, a terminal table |
| `copying` | answers, variants, code | `AnswerFlag`s and a `CodeReport`, for the instructor, never for students |
| `copying_page`, `signals` | the flags; SUBMISSIONS, build, gradebook | copying.html and copying.csv; `qkv copying`'s run |
| `terminal` | intake rows, late outcomes, changes, a trail | rich tables |
"""
