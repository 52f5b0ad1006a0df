"""The grader's side of the course: hidden checks, building the release and the solutions,
grading submissions, feedback. A grading kernel sees only `autograder.runtime` of it."""
