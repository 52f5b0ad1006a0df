"""The grader's side of the course: hidden checks, building the release and the solutions,
grading submissions, feedback. Student kernels import only `autograder.checks`."""
